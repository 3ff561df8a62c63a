package dynamo_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
)

// TestCorruptItems: items that cannot be decoded give ErrCorruptRecord from
// Get, from a refused Create and Replace and from the engine, which does
// not run the handler; nothing panics.
func TestCorruptItems(t *testing.T) {
	s, c, table := newStore(t, dynamo.Options{})
	g := guard(t, s)
	now := base()
	// valid returns a well-formed completed item for scope sc.
	valid := func(sc idemkit.Scope) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			"pk": S(sc.ID(false)), "st": S("completed"), "tn": S(sc.Tenant), "op": S(sc.Operation), "ik": S(sc.Key),
			"fp": S("v1:sha256:c"), "ow": S("o"), "lu": N(now.UnixMilli()), "ru": N(now.Add(time.Hour).UnixMilli()),
			"exp": N(now.Add(time.Hour).Unix()), "sc": N(201), "sb": &types.AttributeValueMemberB{Value: []byte("ok")},
		}
	}
	for _, tc := range []struct {
		name string
		edit func(map[string]types.AttributeValue)
	}{
		{"garbage zstd body", func(it map[string]types.AttributeValue) {
			it["se"] = S("zstd")
			it["sb"] = &types.AttributeValueMemberB{Value: []byte("\x28\xb5\x2f\xfd garbage")}
		}},
		{"unknown body encoding", func(it map[string]types.AttributeValue) { it["se"] = S("br") }},
		{"state as a number", func(it map[string]types.AttributeValue) { it["st"] = N(1) }},
		{"unknown state", func(it map[string]types.AttributeValue) { it["st"] = S("done") }},
		{"no owner", func(it map[string]types.AttributeValue) { delete(it, "ow") }},
		{"replay time as a string", func(it map[string]types.AttributeValue) { it["ru"] = S("soon") }},
		{"body as a string", func(it map[string]types.AttributeValue) { it["sb"] = S("ok") }},
		{"header as a list", func(it map[string]types.AttributeValue) {
			it["sh"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{S("x")}}
		}},
		{"header value as a number", func(it map[string]types.AttributeValue) {
			it["sh"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"Location": &types.AttributeValueMemberL{Value: []types.AttributeValue{N(1)}}}}
		}},
		{"completed without a status", func(it map[string]types.AttributeValue) { delete(it, "sc") }},
		{"status out of range", func(it map[string]types.AttributeValue) { it["sc"] = N(100000) }},
		{"unknown resolution", func(it map[string]types.AttributeValue) { it["ra"] = S("maybe") }},
		// The store never writes a body with the omitted flag, nor an
		// encoding without a body: such an item was edited by hand.
		{"omitted with a body", func(it map[string]types.AttributeValue) { it["som"] = &types.AttributeValueMemberBOOL{Value: true} }},
		{"body encoding without a body", func(it map[string]types.AttributeValue) { delete(it, "sb"); it["se"] = S("zstd") }},
		{"huge number", func(it map[string]types.AttributeValue) {
			it["ca"] = &types.AttributeValueMemberN{Value: "1e30"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: tc.name}
			it := valid(sc)
			tc.edit(it)
			if _, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
				t.Fatal(err)
			}
			id := sc.ID(false)
			if _, err := s.Get(context.Background(), id); !errors.Is(err, idemkit.ErrCorruptRecord) {
				t.Fatalf("Get: %v, want ErrCorruptRecord", err)
			}
			rec := &idemkit.Record{ID: id, Scope: sc, State: idemkit.StateInFlight, Owner: "new", Version: "v-new", LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}
			if met, err := s.Create(context.Background(), rec); !errors.Is(err, idemkit.ErrCorruptRecord) {
				t.Fatalf("Create: %+v, %v, want ErrCorruptRecord", met, err)
			}
			prev := rec.Clone()
			prev.Version = "v-read"
			if met, err := s.Replace(context.Background(), rec, prev); !errors.Is(err, idemkit.ErrCorruptRecord) {
				t.Fatalf("Replace: %+v, %v, want ErrCorruptRecord", met, err)
			}
			_, _, err := g.Do(context.Background(), idemkit.Request{Scope: sc, Fingerprint: "v1:sha256:c"}, func(context.Context) (*idemkit.Snapshot, error) {
				t.Error("handler ran over a corrupt record")
				return nil, errors.New("ran")
			})
			if !errors.Is(err, idemkit.ErrCorruptRecord) {
				t.Fatalf("Do: %v, want ErrCorruptRecord", err)
			}
		})
	}
}

// TestInvalidUTF8ScopesStayApart: DynamoDB strings are UTF-8, and the SDK
// sends a Go string that is not as U+FFFD per bad byte, so two scopes that
// differ only in their invalid bytes ("t\xff" and "t\xfe") would name one
// item: the second would replay the first's response (another tenant's,
// another resource's). The store refuses such a record instead
// (ErrRecordInvalid): the second request neither replays the first nor
// shares its record.
func TestInvalidUTF8ScopesStayApart(t *testing.T) {
	base := idemkit.Scope{Tenant: "acme", Operation: "POST /orders/1", Key: "k"}
	cases := []struct {
		name string
		a, b func(idemkit.Scope) idemkit.Scope
	}{
		{"tenant",
			func(s idemkit.Scope) idemkit.Scope { s.Tenant = "acme\xff"; return s },
			func(s idemkit.Scope) idemkit.Scope { s.Tenant = "acme\xfe"; return s }},
		{"operation",
			func(s idemkit.Scope) idemkit.Scope { s.Operation = "POST /orders/\xff"; return s },
			func(s idemkit.Scope) idemkit.Scope { s.Operation = "POST /orders/\xc0"; return s }},
		{"key",
			func(s idemkit.Scope) idemkit.Scope { s.Key = "k\xe9"; return s },
			func(s idemkit.Scope) idemkit.Scope { s.Key = "k\xe8"; return s }},
		{"key, surrogate half",
			func(s idemkit.Scope) idemkit.Scope { s.Key = "k\xed\xa0\x80"; return s },
			func(s idemkit.Scope) idemkit.Scope { s.Key = "k\xed\xb0\x80"; return s }},
	}
	s, _, _ := newStore(t, dynamo.Options{})
	for _, aw := range []bool{false, true} {
		g := guardWith(t, idemkit.Config{Store: s, AccountWide: aw})
		for _, tc := range cases {
			var runs atomic.Int32
			for i, sc := range []idemkit.Scope{tc.a(base), tc.b(base)} {
				body := []byte(sc.Tenant + "|" + sc.Operation + "|" + sc.Key)
				req := idemkit.Request{Scope: sc, Fingerprint: "v2:sha256:same"}
				snap, replayed, err := g.Do(context.Background(), req, func(context.Context) (*idemkit.Snapshot, error) {
					runs.Add(1)
					return &idemkit.Snapshot{Status: 201, Body: body}, nil
				})
				switch {
				case replayed:
					t.Errorf("%s (account-wide %v), request %d: replayed %q, the response of another scope", tc.name, aw, i, snap.Body)
				case err == nil:
					t.Errorf("%s (account-wide %v), request %d: stored a scope that is not UTF-8", tc.name, aw, i)
				case !errors.Is(err, idemkit.ErrRecordInvalid) || errors.Is(err, idemkit.ErrStoreUnavailable):
					t.Errorf("%s (account-wide %v), request %d: %v, want ErrRecordInvalid", tc.name, aw, i, err)
				}
			}
			if n := runs.Load(); n != 0 {
				t.Errorf("%s (account-wide %v): the handler ran %d times for records that cannot be stored", tc.name, aw, n)
			}
		}
	}
}

// TestInvalidUTF8RecordRefused: every string of a record the store writes
// (ID, scope, fingerprint, owner, version) must be UTF-8; one that is not
// is refused with ErrRecordInvalid by Create and Replace, and nothing is
// written.
func TestInvalidUTF8RecordRefused(t *testing.T) {
	s, _, _ := newStore(t, dynamo.Options{})
	ctx := context.Background()
	now := time.Now()
	valid := func() *idemkit.Record {
		sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "k-utf8"}
		return &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Fingerprint: "v2:sha256:x", Owner: "owner", Version: "v1",
			LeaseUntil: now.Add(time.Minute), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now}
	}
	cases := map[string]func(*idemkit.Record){
		"id":          func(r *idemkit.Record) { r.ID += "\xff" },
		"tenant":      func(r *idemkit.Record) { r.Scope.Tenant += "\xff" },
		"operation":   func(r *idemkit.Record) { r.Scope.Operation += "\xff" },
		"key":         func(r *idemkit.Record) { r.Scope.Key += "\xff" },
		"fingerprint": func(r *idemkit.Record) { r.Fingerprint += "\xff" },
		"owner":       func(r *idemkit.Record) { r.Owner += "\xff" },
		"version":     func(r *idemkit.Record) { r.Version += "\xff" },
	}
	for name, spoil := range cases {
		rec := valid()
		spoil(rec)
		if _, err := s.Create(ctx, rec); !errors.Is(err, idemkit.ErrRecordInvalid) {
			t.Errorf("Create with a %s that is not UTF-8: %v, want ErrRecordInvalid", name, err)
		}
		done := rec.Clone()
		done.State, done.CompletedAt, done.Snapshot, done.Version = idemkit.StateCompleted, now, &idemkit.Snapshot{Status: 201}, "v2"
		if name == "version" {
			done.Version += "\xff"
		}
		if _, err := s.Replace(ctx, done, valid()); !errors.Is(err, idemkit.ErrRecordInvalid) {
			t.Errorf("Replace with a %s that is not UTF-8: %v, want ErrRecordInvalid", name, err)
		}
	}
	// Nothing was written under the ID the SDK would have sent.
	if _, err := s.Get(ctx, valid().ID+"\uFFFD"); !errors.Is(err, idemkit.ErrNotFound) {
		t.Errorf("Get of the replaced ID: %v, want ErrNotFound", err)
	}
}

// TestInvalidUTF8IDNamesNoRecord: no stored record has an ID or tenant
// that is not UTF-8 (Create and Replace refuse them), so Get and the
// listings given one answer as for an absent record, never with the
// record of the scope the SDK would turn it into (U+FFFD in place of each
// bad byte). An ID keeps apart by its length prefixes (U+FFFD is three
// bytes); a tenant listing has none, and listed the other tenant's
// records.
func TestInvalidUTF8IDNamesNoRecord(t *testing.T) {
	s, _, _ := newStore(t, dynamo.Options{IndexInFlight: true})
	ctx := context.Background()
	now := time.Now()
	// The record the bad bytes would be mangled into: indeterminate, of
	// tenant "acme\uFFFD", owner "o".
	sc := idemkit.Scope{Tenant: "acme\uFFFD", Operation: "POST /orders", Key: "k\uFFFD"}
	rec := create(t, s, &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Fingerprint: "v2:sha256:x", Owner: "o",
		LeaseUntil: now.Add(time.Second), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now})
	marked := change(t, s, rec, markedStale)
	later := now.Add(2 * time.Second)
	badScope := idemkit.Scope{Tenant: "acme\xff", Operation: sc.Operation, Key: "k\xfe"}
	bad := badScope.ID(false)

	if _, err := s.Get(ctx, bad); !errors.Is(err, idemkit.ErrNotFound) {
		t.Errorf("Get: %v, want ErrNotFound", err)
	}
	// A write of the record under the bad ID, in place of the version
	// stored under the mangled one, is refused before any call.
	spoiled := marked.Clone()
	spoiled.ID, spoiled.Scope, spoiled.Version = bad, badScope, "v-bad"
	spoiled.State, spoiled.Resolution = idemkit.StateFailed, &idemkit.Resolution{As: idemkit.StateFailed, Operator: "op", Reason: "wrong record"}
	if _, err := s.Replace(ctx, spoiled, marked); !errors.Is(err, idemkit.ErrRecordInvalid) {
		t.Errorf("Replace: %v, want ErrRecordInvalid", err)
	}
	if _, err := s.Create(ctx, spoiled); !errors.Is(err, idemkit.ErrRecordInvalid) {
		t.Errorf("Create: %v, want ErrRecordInvalid", err)
	}
	for name, list := range map[string]func(tenant string) ([]*idemkit.Record, string, error){
		"ListIndeterminate": func(tn string) ([]*idemkit.Record, string, error) { return s.ListIndeterminate(ctx, tn, "", 0, later) },
		"ListStale":         func(tn string) ([]*idemkit.Record, string, error) { return s.ListStale(ctx, tn, "", 0, later) },
	} {
		if recs, _, err := list("acme\xff"); err != nil || len(recs) != 0 {
			t.Errorf("%s of tenant \"acme\\xff\": %d records, %v; want none", name, len(recs), err)
		}
	}
	// The record itself is untouched.
	got := get(t, s, rec.ID)
	if got.State != idemkit.StateIndeterminate || got.Resolution != nil || got.Version != marked.Version {
		t.Fatalf("the record of the mangled ID: %+v; want it indeterminate, unresolved", got)
	}
}
