package integration

import (
	"encoding/json"
	"strings"

	"github.com/idemkit/idemkit/internal/testing/faults"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
)

// The store's calls are told apart by what they write, as
// faultstore.Op names the engine's changes: a PutItem (a Create) by the
// state of the item it puts, an UpdateItem (a Replace, which sets only
// what differs from the version it replaces) by the attributes it sets:
// the state (st) where it changes, the owner (ow) of a claim in place of
// another's lease, the cause (cz) of a mark, the resolution (ra), the
// lease (lu) of a renewal. Nothing here depends on how the store names its
// placeholders, orders its attributes or words its condition.

// kitWrite returns the change the request body b of the DynamoDB JSON
// protocol makes to a record: one of faultstore's Op names, or "" for a
// request that writes no record (a read, a listing, another table's
// item, an UpdateItem that sets no state, owner nor lease).
func kitWrite(b []byte) string {
	var in struct {
		Item             map[string]map[string]any
		UpdateExpression string
		Names            map[string]string         `json:"ExpressionAttributeNames"`
		Values           map[string]map[string]any `json:"ExpressionAttributeValues"`
	}
	if json.Unmarshal(b, &in) != nil {
		return ""
	}
	if in.Item != nil {
		switch s, _ := in.Item["st"]["S"].(string); s {
		case "in_flight":
			return faultstore.OpClaim
		case "released":
			return faultstore.OpRelease
		case "completed":
			return faultstore.OpComplete
		}
		return ""
	}
	if in.UpdateExpression == "" {
		return ""
	}
	set := setClause(in.UpdateExpression, in.Names)
	str := func(name string) string {
		s, _ := in.Values[set[name]]["S"].(string)
		return s
	}
	_, owner := set["ow"]
	_, resolution := set["ra"]
	_, lease := set["lu"]
	switch str("st") {
	case "released":
		return faultstore.OpRelease
	case "in_flight":
		return faultstore.OpClaim
	case "completed":
		if resolution {
			return faultstore.OpResolve
		}
		return faultstore.OpComplete
	case "failed":
		return faultstore.OpResolve
	case "indeterminate":
		if str("cz") == "outcome_unknown" {
			return faultstore.OpMarkUnknown
		}
		return faultstore.OpMarkIndeterminate
	}
	switch {
	case owner:
		return faultstore.OpClaim // a stale lease taken over: in_flight stays
	case lease:
		return faultstore.OpExtend
	}
	return ""
}

// setClause returns the attributes the SET clause of expr sets, each to
// the value placeholder it is set to ("" when it is set to anything
// else), names resolved through names.
func setClause(expr string, names map[string]string) map[string]string {
	out := map[string]string{}
	rest, ok := strings.CutPrefix(strings.TrimSpace(expr), "SET ")
	if !ok {
		if i := strings.Index(expr, " SET "); i >= 0 {
			rest = expr[i+len(" SET "):]
		} else {
			return out
		}
	}
	// The clause ends at the next clause keyword.
	for _, kw := range []string{" REMOVE ", " ADD ", " DELETE "} {
		if i := strings.Index(rest, kw); i >= 0 {
			rest = rest[:i]
		}
	}
	depth, start := 0, 0
	assign := func(a string) {
		name, val, ok := strings.Cut(a, "=")
		if !ok {
			return
		}
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if n, ok := names[name]; ok {
			name = n
		}
		if !strings.HasPrefix(val, ":") || strings.ContainsAny(val, " (") {
			val = ""
		}
		out[name] = val
	}
	for i, r := range rest {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				assign(rest[start:i])
				start = i + 1
			}
		}
	}
	assign(rest[start:])
	return out
}

// writes returns a matcher of the request bodies that make one of the
// changes ops (faultstore's Op names), and, when given, hold every one of
// also (a table name, a tenant, a key).
func writes(ops []string, also ...func([]byte) bool) func([]byte) bool {
	return func(b []byte) bool {
		for _, m := range also {
			if !m(b) {
				return false
			}
		}
		w := kitWrite(b)
		for _, op := range ops {
			if w == op {
				return true
			}
		}
		return false
	}
}

// onWrite spoils the store's requests that make one of the changes ops,
// whatever the operation carries them (a claim is a PutItem of a new key,
// an UpdateItem in place of a tombstone, a failed record or a stale
// lease).
func onWrite(k faults.Kind, skip, times int, ops ...string) faults.Rule {
	return faults.Rule{Match: writes(ops), Skip: skip, Times: times, Kind: k}
}

func onClaim(k faults.Kind, skip, times int) faults.Rule {
	return onWrite(k, skip, times, faultstore.OpClaim)
}

func onComplete(k faults.Kind, skip, times int) faults.Rule {
	return onWrite(k, skip, times, faultstore.OpComplete)
}

func onRelease(k faults.Kind, skip, times int) faults.Rule {
	return onWrite(k, skip, times, faultstore.OpRelease)
}

// onMark spoils the marks: a stale lease marked indeterminate by a retry,
// or a run's own outcome reported unknown.
func onMark(k faults.Kind, skip, times int) faults.Rule {
	return onWrite(k, skip, times, faultstore.OpMarkIndeterminate, faultstore.OpMarkUnknown)
}

// onMarkUnknown spoils a run's report of its unknown outcome, not the
// renewals nor a retry's mark of a stale lease.
func onMarkUnknown(k faults.Kind, skip, times int) faults.Rule {
	return onWrite(k, skip, times, faultstore.OpMarkUnknown)
}

// onResolve spoils an operator's resolution, not the mark Resolve may make
// first.
func onResolve(k faults.Kind, skip, times int) faults.Rule {
	return onWrite(k, skip, times, faultstore.OpResolve)
}

// onExtend spoils the lease renewals.
func onExtend(k faults.Kind, skip, times int) faults.Rule {
	return onWrite(k, skip, times, faultstore.OpExtend)
}

func onRead(k faults.Kind, skip, times int) faults.Rule {
	return faults.Rule{Op: "GetItem", Skip: skip, Times: times, Kind: k}
}
