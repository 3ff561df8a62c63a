package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/policydefault"
	"github.com/idemkit/idemkit/internal/setting"
	"github.com/idemkit/idemkit/internal/uuidv7"
)

// Regions pins every tenant to a home region, for DynamoDB global tables:
// two regions accepting claims for one key inside the replication lag
// would both run the request. A regional Store sends every call for a
// record to its tenant's home region, whichever region it runs in, and
// fails closed (idemkit.ErrStoreUnavailable) when that region cannot be
// reached; it never falls back to another region on its own. A record is
// routed by its Scope.Tenant, and Get by the tenant its ID carries (see
// idemkit.Scope.ID: the tenant is the ID's first field, in a hashed ID of
// a tenant of at most 1024 bytes too). An ID that carries
// no tenant, and a record whose tenant is too long for its ID to carry
// it, are refused with idemkit.ErrRecordInvalid, without a call.
type Regions struct {
	// Clients holds one client per region name. Required.
	Clients map[string]Client
	// Home returns the home region of a tenant. Required.
	Home func(tenant string) string
	// Override, when set, is consulted before Home: an operator fails a
	// tenant over by returning a Failover and true. The writes it routes
	// are fenced (see Failover).
	Override func(tenant string) (Failover, bool)
	// Local is the region this process runs in. ListIndeterminate and
	// ListStale across all tenants read it (a global table replicates
	// every record to it); without it, or without a client for it, those
	// listings fail (requests do not need it).
	Local string
}

// Failover moves a tenant's records to Region, typically while its home
// region cannot be reached. Records the previous region wrote that have
// not replicated are missing in Region, or older there, and a retry of
// their keys would run again there. So the writes a Failover routes are
// fenced, unless Reconciled or AcceptUnreplicated is set, for every key
// not shown to be first used after At (a UUIDv7 whose time is after At +
// KeyClockSkew and not after the store's clock + KeyClockSkew):
//
//   - a Create stores nothing: it returns the record Region holds, read
//     with one consistent GetItem (the engine answers the request from
//     it: a replay, 409, 422, indeterminate), and with none a claim is
//     refused with a *FailoverError, which is idemkit.ErrStoreUnavailable
//     (503, not stored);
//   - a Replace that claims the key (an in_flight record in place of a
//     failed, released or expired record, or of another owner's stale
//     lease, under either stale policy), that marks a stale lease
//     indeterminate (its cause lease_expired) or that records an
//     operator's resolution is refused the same way, whatever Region
//     holds: Region's copy may lack a later write of it from the previous
//     region (a completion, a resolution), which the write would
//     overwrite once it replicates, the last writer winning;
//   - a release leaves a tombstone only in place of its owner's in_flight
//     record: in place of none or of another record it writes nothing (a
//     tombstone would win over an older record of the key not yet
//     replicated) and is reported done, since no copy of a fenced claim
//     can land.
//
// The store tells the call from the records it is given, as the engine
// writes them (see fenceReplace). Reads, completions, renewals, the
// owner's own mark (outcome unknown) and release, and listings go to
// Region unfenced.
type Failover struct {
	// Region holds the tenant's records from At on. Required.
	Region string
	// At is the time from which no claim of the tenant lands in any other
	// region: no earlier than the moment every process routes the tenant
	// by this Failover. A later At only fences more keys. Zero: unknown,
	// no key is shown to be new.
	At time.Time
	// KeyClockSkew bounds how far the clocks of the clients minting UUIDv7
	// keys, and this process's, may run ahead. Zero: 5 min, the default
	// of idemkit.Policy.KeyClockSkew.
	KeyClockSkew time.Duration
	// Reconciled states that every live record the tenant's previous
	// region holds is in Region too: replication caught up after that
	// region came back, or every record it wrote before At has expired.
	// It lifts the fence.
	Reconciled bool
	// AcceptUnreplicated lifts the fence without reconciling: a request
	// whose record did not replicate to Region may run again. It trades
	// exactly-once for availability for this tenant.
	AcceptUnreplicated bool
}

// fencing reports whether f fences its tenant: it is neither reconciled
// nor accepted.
func (f *Failover) fencing() bool { return f != nil && !f.Reconciled && !f.AcceptUnreplicated }

// fences reports whether a write of key at now, routed by f, is fenced:
// f is neither reconciled nor accepted and key is not a UUIDv7 whose time
// shows it was first used after f.At.
func (f *Failover) fences(key string, now time.Time) bool {
	if !f.fencing() {
		return false
	}
	t, ok := uuidv7.Time(key)
	if !ok || f.At.IsZero() {
		return true
	}
	skew := setting.Or(f.KeyClockSkew, policydefault.KeyClockSkew)
	return !t.After(f.At.Add(skew)) || t.After(now.Add(skew))
}

// writeTime is when rec was written, by its writer's clock, as the record
// says: a claim's CreatedAt, a resolution's ResolvedAt, a release's
// LeaseUntil (its time); a mark keeps the lease it marks, which ended
// before it: LeaseUntil, earlier than the mark, which only fences more
// keys, never fewer.
func writeTime(rec *idemkit.Record) time.Time {
	switch {
	case rec.Resolution != nil:
		return rec.Resolution.ResolvedAt
	case rec.State == idemkit.StateInFlight:
		return rec.CreatedAt
	case rec.State == idemkit.StateReleased, rec.State == idemkit.StateIndeterminate:
		return rec.LeaseUntil
	}
	return rec.CreatedAt
}

// fencedCreate answers a Create that fo fences (see Failover): it stores
// nothing, and returns the record Region holds, read with one consistent
// GetItem. With none, a tombstone is reported stored and a claim is
// refused with a *FailoverError.
func (s *Store) fencedCreate(ctx context.Context, client Client, rec *idemkit.Record, fo *Failover) (*idemkit.Record, error) {
	item, err := s.getItem(ctx, client, "create", rec.ID)
	switch {
	case err != nil:
		return nil, err
	case len(item) > 0:
		return s.lay.decode(item)
	case rec.State == idemkit.StateReleased:
		return nil, nil
	}
	return nil, s.fail("claim", &FailoverError{Tenant: rec.Scope.Tenant, Key: rec.Scope.Key, Failover: *fo})
}

// fenceReplace tells whether a Replace of prev by rec, routed by fo, which
// fences its tenant, is written. A fenced claim, mark or resolution is
// refused with a *FailoverError naming the call and the state of the live
// record it would replace; a fenced release writes nothing and is
// reported done. The call is told from (prev, rec), as the engine writes
// them: a claim is an in_flight rec in place of anything but its owner's
// own in_flight record (a renewal, or a late copy of the claim); a mark,
// an in_flight prev made indeterminate for its ended lease (cause
// lease_expired); a resolution, an indeterminate prev given a
// Resolution; a release, a tombstone.
func (s *Store) fenceReplace(rec, prev *idemkit.Record, fo *Failover) (write bool, err error) {
	call := fencedCall(rec, prev)
	if call == "" {
		return true, nil
	}
	now := writeTime(rec)
	switch {
	case !fo.fences(rec.Scope.Key, now):
		return true, nil
	case call == "release":
		return false, nil
	}
	fe := &FailoverError{Tenant: rec.Scope.Tenant, Key: rec.Scope.Key, Failover: *fo}
	if prev.Live(now) && prev.State != idemkit.StateReleased {
		fe.State = prev.State
	}
	if call != "claim" {
		fe.Op = call
	}
	return false, s.fail(call, fe)
}

// fencedCall names the call a fence may refuse that writing rec in place
// of prev makes (see fenceReplace), "" for one it never fences.
func fencedCall(rec, prev *idemkit.Record) string {
	own := prev.State == idemkit.StateInFlight && prev.Owner == rec.Owner
	switch {
	case rec.State == idemkit.StateReleased && !own:
		return "release"
	case rec.State == idemkit.StateInFlight && !own:
		return "claim"
	case prev.State == idemkit.StateInFlight && rec.State == idemkit.StateIndeterminate && rec.Cause == idemkit.CauseLeaseExpired:
		return "mark indeterminate"
	case prev.State == idemkit.StateIndeterminate && rec.Resolution != nil && prev.Resolution == nil:
		return "resolve"
	}
	return ""
}

// FailoverError is a write refused by a Failover's fence (see Failover):
// the key is not shown to be first used after the failover, and the
// failover region may lack a later write of its record. It is
// idemkit.ErrStoreUnavailable and idemkit.ErrNothingStored under
// errors.Is: nothing is stored and the client is told to retry later.
type FailoverError struct {
	Tenant   string
	Key      string
	Failover Failover
	// State is the state of the live record the write would have replaced
	// (failed, in_flight with a stale lease, indeterminate); "" when there
	// is none.
	State idemkit.State
	// Op is the refused call when it is not a claim: "mark indeterminate"
	// or "resolve".
	Op string
}

func (e *FailoverError) Error() string {
	if e.Op != "" {
		return fmt.Sprintf("dynamo: tenant %q failed over to %s at %s: %s of key %q refused: it is not shown to be first used after the failover, "+
			"and %s may lack a later write of its record from the region the tenant left, which this one would overwrite; "+
			"refused until the failover is Reconciled (or AcceptUnreplicated)",
			e.Tenant, e.Failover.Region, e.Failover.At.UTC().Format(time.RFC3339), e.Op, e.Key, e.Failover.Region)
	}
	found := "holds no record of it"
	if e.State != "" {
		found = fmt.Sprintf("holds a %s record of it that the claim would replace", e.State)
	}
	return fmt.Sprintf("dynamo: tenant %q failed over to %s at %s: key %q is not shown to be first used after the failover and %s %s; "+
		"refused until the failover is Reconciled (or AcceptUnreplicated)",
		e.Tenant, e.Failover.Region, e.Failover.At.UTC().Format(time.RFC3339), e.Key, e.Failover.Region, found)
}

// Unwrap returns idemkit.ErrStoreUnavailable and idemkit.ErrNothingStored:
// the fence refused the claim in a failed condition, so nothing was
// written, and the guard neither tries it again nor frees a key it does
// not hold.
func (e *FailoverError) Unwrap() []error {
	return []error{idemkit.ErrStoreUnavailable, idemkit.ErrNothingStored}
}

// NewRegional returns a Store that keeps each record in table in its
// tenant's home region (see Regions). It refuses Regions without Clients
// or Home, a nil client and an empty table with an error wrapping
// idemkit.ErrInvalidConfig.
func NewRegional(r Regions, table string, opts Options) (*Store, error) {
	if len(r.Clients) == 0 || r.Home == nil {
		return nil, fmt.Errorf("dynamo: Regions needs Clients and Home: %w", idemkit.ErrInvalidConfig)
	}
	if table == "" {
		return nil, fmt.Errorf("dynamo: empty table name: %w", idemkit.ErrInvalidConfig)
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	clients := make(map[string]Client, len(r.Clients))
	for name, c := range r.Clients {
		if c == nil {
			return nil, fmt.Errorf("dynamo: nil client for region %q: %w", name, idemkit.ErrInvalidConfig)
		}
		clients[name] = c
	}
	home := func(tenant string) (Client, *Failover, error) {
		var fo *Failover
		region := ""
		if r.Override != nil {
			if f, ok := r.Override(tenant); ok {
				fo, region = &f, f.Region
			}
		}
		if fo == nil {
			region = r.Home(tenant)
		}
		c := clients[region]
		if c == nil {
			return nil, nil, fmt.Errorf("dynamo: tenant %q: no client for home region %q", tenant, region)
		}
		return c, fo, nil
	}
	list := func(tenant string) (Client, error) {
		if tenant != "" {
			c, _, err := home(tenant)
			return c, err
		}
		c := clients[r.Local]
		if c == nil {
			return nil, fmt.Errorf("dynamo: no client for the local region %q", r.Local)
		}
		return c, nil
	}
	s := newStore(table, opts, home, list, clients)
	s.regional = true
	return s, nil
}
