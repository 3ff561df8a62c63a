package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/idemkit/idemkit"
)

// Regions pins every tenant to a home region, for DynamoDB global tables:
// two regions accepting claims for one key inside the replication lag
// would both run the request. A regional Store sends every call for a
// record to its tenant's home region, whichever region it runs in, and
// fails closed (idemkit.ErrStoreUnavailable) when that region cannot be
// reached; it never falls back to another region on its own. An ID whose
// tenant cannot be read (idemkit.IDTenant) is refused with
// idemkit.ErrRecordInvalid, without a call.
type Regions struct {
	// Clients holds one client per region name. Required.
	Clients map[string]Client
	// Home returns the home region of a tenant. Required.
	Home func(tenant string) string
	// Override, when set, is consulted before Home: an operator fails a
	// tenant over by returning a Failover and true. Claims it routes are
	// fenced (see Failover).
	Override func(tenant string) (Failover, bool)
	// Local is the region this process runs in. ListIndeterminate and
	// ListStale across all tenants read it (a global table replicates
	// every record to it); without it, or without a client for it, those
	// listings fail (claims and completions do not need it).
	Local string
}

// Failover moves a tenant's records to Region, typically while its home
// region cannot be reached. Records the previous region wrote that have
// not replicated are missing in Region, or older there, and a retry of
// their keys would run again there. So a claim routed by a Failover is
// fenced, unless Reconciled or AcceptUnreplicated is set: it runs only a
// key shown to be first used after At, a UUIDv7 whose time is after At +
// KeyClockSkew and not after the claim's time + KeyClockSkew. Any other
// key is answered from the live record Region holds for it (a replay,
// 409, 422, indeterminate); when there is none, or the claim would
// replace it or mark it (a failed record, another's lease ended, under
// either stale policy), the claim is refused with a *FailoverError, which
// is idemkit.ErrStoreUnavailable (503, not stored).
// A mark (MarkIndeterminate) or a resolution of a record whose key is not
// shown to be first used after At is refused the same way, whatever
// Region holds: Region's copy may lack a later write of it from the
// previous region (a completion, a resolution), which the mark or the
// resolution would overwrite once it replicates, the last writer winning.
// Reads, completions, releases, lease renewals and listings go to Region
// unfenced.
type Failover struct {
	// Region holds the tenant's records from At on. Required.
	Region string
	// At is the time from which no claim of the tenant lands in any other
	// region: no earlier than the moment every process routes the tenant
	// by this Failover. A later At only fences more keys. Zero: unknown,
	// no key is shown to be new.
	At time.Time
	// KeyClockSkew bounds how far the clocks of the clients minting UUIDv7
	// keys, and this process's, may run ahead. Zero:
	// idemkit.DefaultKeyClockSkew.
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

// fences reports whether a claim of key at now, routed by f, must not
// store a new record: f is neither reconciled nor accepted and key is not
// a UUIDv7 whose time shows it was first used after f.At.
func (f *Failover) fences(key string, now time.Time) bool {
	if !f.fencing() {
		return false
	}
	t, ok := keyTime(key)
	if !ok || f.At.IsZero() {
		return true
	}
	skew := f.KeyClockSkew
	if skew <= 0 {
		skew = idemkit.DefaultKeyClockSkew
	}
	return !t.After(f.At.Add(skew)) || t.After(now.Add(skew))
}

// fenceWrite refuses a mark or a resolution (op) of the record id under
// a Failover that fences its tenant, unless the ID's key is shown to be
// first used after the failover (a hashed ID's key is not), with a
// *FailoverError naming op.
func (s *Store) fenceWrite(ctx context.Context, op, id string, now time.Time) error {
	_, fo, err := s.routed(ctx, op, id)
	if err != nil || !fo.fencing() {
		return err
	}
	sc, _, perr := idemkit.ParseID(id)
	if perr == nil && !fo.fences(sc.Key, now) {
		return nil
	}
	tenant, _ := idemkit.IDTenant(id)
	return s.fail(op, &FailoverError{Tenant: tenant, Key: sc.Key, Failover: *fo, Op: op})
}

// staleLease reports whether cur, the record a fenced claim of rec met,
// is another owner's in_flight record of rec's request whose lease has
// ended. The fence refuses it under either stale policy: the region the
// tenant left may hold a later write of it (its completion, say) not yet
// replicated, and marking it indeterminate here, or taking it over, would
// win over that write, by last-writer-wins replication, once it arrives.
// (Another request's is answered 422, which writes nothing.)
func staleLease(cur, rec *idemkit.Record, now time.Time) bool {
	return cur.State == idemkit.StateInFlight && cur.Owner != rec.Owner && cur.LeaseExpired(now) &&
		cur.Fingerprint == rec.Fingerprint && cur.Scope.Operation == rec.Scope.Operation
}

// keyTime returns the time of a UUIDv7 key in its canonical form, read
// as idemkit.Policy's key-time check reads it.
func keyTime(key string) (time.Time, bool) {
	if len(key) != 36 {
		return time.Time{}, false
	}
	u, err := uuid.Parse(key)
	if err != nil || u.Version() != 7 {
		return time.Time{}, false
	}
	sec, nsec := u.Time().UnixTime()
	return time.Unix(sec, nsec), true
}

// FailoverError is a claim refused by a Failover's fence: the key is not
// shown to be first used after the failover, and the failover region
// holds no record that answers it. It is idemkit.ErrStoreUnavailable and
// idemkit.ErrNothingStored under errors.Is: nothing is stored and the
// client is told to retry later.
type FailoverError struct {
	Tenant   string
	Key      string // "" for a hashed ID's, which is not read
	Failover Failover
	// State is the state of the record the claim would have replaced
	// (failed, or in_flight with a stale lease); "" when there is none.
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
// tenant's home region. The tenant is read from the record ID, whose
// encoding is idemkit.Scope.ID's (idemkit.IDTenant). It refuses Regions
// without Clients or Home, a nil client and an empty table with an error
// wrapping idemkit.ErrInvalidConfig.
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
	route := func(id string) (Client, *Failover, error) {
		tenant, err := idemkit.IDTenant(id)
		if err != nil {
			// No record has such an ID: a bad argument, not an outage.
			return nil, nil, fmt.Errorf("dynamo: %w: %w", idemkit.ErrRecordInvalid, err)
		}
		return home(tenant)
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
	return newStore(table, opts, route, list, clients), nil
}
