package dynamo

import (
	"fmt"

	"github.com/idemkit/idemkit"
)

// Regions pins every tenant to a home region, for DynamoDB global tables:
// two regions accepting claims for one key inside the replication lag
// would both run the request. A regional Store sends every call for a
// record to its tenant's home region, whichever region it runs in, and
// fails closed (idemkit.ErrStoreUnavailable) when that region cannot be
// reached; it never falls back to another region on its own. An ID whose
// tenant cannot be read (see TenantOf) is refused with
// idemkit.ErrRecordInvalid, without a call.
type Regions struct {
	// Clients holds one client per region name. Required.
	Clients map[string]Client
	// Home returns the home region of a tenant. Required.
	Home func(tenant string) string
	// Override, when set, is consulted before Home: an operator fails a
	// tenant over by returning its new region and true.
	Override func(tenant string) (region string, ok bool)
	// Local is the region this process runs in. ListIndeterminate and
	// ListStale across all tenants read it (a global table replicates
	// every record to it); without it, or without a client for it, those
	// listings fail (claims and completions do not need it).
	Local string
}

// NewRegional returns a Store that keeps each record in table in its
// tenant's home region. The tenant is read from the record ID, whose
// encoding is idemkit.Scope.ID's (see TenantOf). It refuses Regions
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
	home := func(tenant string) (Client, error) {
		region, ok := "", false
		if r.Override != nil {
			region, ok = r.Override(tenant)
		}
		if !ok {
			region = r.Home(tenant)
		}
		c := clients[region]
		if c == nil {
			return nil, fmt.Errorf("dynamo: tenant %q: no client for home region %q", tenant, region)
		}
		return c, nil
	}
	route := func(id string) (Client, error) {
		tenant, err := TenantOf(id)
		if err != nil {
			// No record has such an ID: a bad argument, not an outage.
			return nil, fmt.Errorf("%w: %w", idemkit.ErrRecordInvalid, err)
		}
		return home(tenant)
	}
	list := func(tenant string) (Client, error) {
		if tenant != "" {
			return home(tenant)
		}
		c := clients[r.Local]
		if c == nil {
			return nil, fmt.Errorf("dynamo: no client for the local region %q", r.Local)
		}
		return c, nil
	}
	return newStore(table, opts, route, list), nil
}

// TenantOf returns the tenant of a record ID, readable or hashed (see
// idemkit.Scope.ID and idemkit.IDTenant). It refuses any other encoding,
// and an ID whose tenant, over idemkit.MaxTenantLen bytes, is hashed.
func TenantOf(id string) (string, error) {
	tenant, err := idemkit.IDTenant(id)
	if err != nil {
		return "", fmt.Errorf("dynamo: %w", err)
	}
	return tenant, nil
}
