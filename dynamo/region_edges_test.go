package dynamo_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
)

// TestRegionalConfig: every configuration NewRegional and New refuse is
// an error wrapping idemkit.ErrInvalidConfig, as idemkit.New's are.
func TestRegionalConfig(t *testing.T) {
	c := endpointClient(closedPort(t))
	home := func(string) string { return "eu-west-1" }
	for _, tc := range []struct {
		name  string
		r     dynamo.Regions
		table string
	}{
		{"no clients", dynamo.Regions{Home: home}, "idem"},
		{"no home", dynamo.Regions{Clients: map[string]dynamo.Client{"eu-west-1": c}}, "idem"},
		{"nil client", dynamo.Regions{Clients: map[string]dynamo.Client{"eu-west-1": c, "us-east-1": nil}, Home: home}, "idem"},
		{"empty table", dynamo.Regions{Clients: map[string]dynamo.Client{"eu-west-1": c}, Home: home}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if s, err := dynamo.NewRegional(tc.r, tc.table, dynamo.Options{}); !errors.Is(err, idemkit.ErrInvalidConfig) || s != nil {
				t.Fatalf("NewRegional: %v, %v; want ErrInvalidConfig", s, err)
			}
		})
	}
	if _, err := dynamo.New(nil, "idem", dynamo.Options{}); !errors.Is(err, idemkit.ErrInvalidConfig) {
		t.Errorf("New with a nil client: %v, want ErrInvalidConfig", err)
	}
	if _, err := dynamo.New(c, "", dynamo.Options{}); !errors.Is(err, idemkit.ErrInvalidConfig) {
		t.Errorf("New with no table: %v, want ErrInvalidConfig", err)
	}
	// Without Local, or in a region with no client of its own, the store
	// is valid: a process there still claims in its tenants' home
	// regions; only the all-tenant listings fail, with a clear error.
	for _, local := range []string{"", "ap-south-1"} {
		s, err := dynamo.NewRegional(dynamo.Regions{Clients: map[string]dynamo.Client{"eu-west-1": c}, Home: home, Local: local}, "idem", dynamo.Options{})
		if err != nil {
			t.Fatalf("NewRegional with Local %q: %v", local, err)
		}
		if _, _, err := s.ListIndeterminate(context.Background(), "", "", 0, time.Now()); err == nil || !strings.Contains(err.Error(), "local region") {
			t.Fatalf("listing all tenants with Local %q: %v, want an error naming the local region", local, err)
		}
	}
}

// TestRegionalListing: a tenant's listings and an operator's resolution
// go to the tenant's home region (its re-homed one under Override), from
// any region; the all-tenant listings read the Local replica. The two
// servers never replicate, so each listing shows which replica it read.
func TestRegionalListing(t *testing.T) {
	eu, us, table := twoRegions(t)
	ctx := context.Background()
	regions := func(local string, override func(string) (dynamo.Failover, bool)) dynamo.Regions {
		return dynamo.Regions{
			Clients: map[string]dynamo.Client{"eu-west-1": eu, "us-east-1": us},
			Home: func(tenant string) string {
				if tenant == "globex" {
					return "us-east-1"
				}
				return "eu-west-1"
			},
			Override: override,
			Local:    local,
		}
	}
	opts := testOptions()
	opts.IndexInFlight = true
	store := func(local string, override func(string) (dynamo.Failover, bool)) *dynamo.Store {
		s, err := dynamo.NewRegional(regions(local, override), table, opts)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	inEU, inUS := store("eu-west-1", nil), store("us-east-1", nil)

	now := base()
	for _, tenant := range []string{"acme", "globex"} {
		for _, key := range []string{"indet", "stale"} {
			sc := idemkit.Scope{Tenant: tenant, Operation: "POST /charges", Key: key}
			rec := &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Fingerprint: "v1:f", Owner: "o-" + tenant + key,
				LeaseUntil: now.Add(-time.Second), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now.Add(-time.Minute)}
			if res, err := inEU.Claim(ctx, rec, now, idemkit.ClaimOptions{}); err != nil || !res.Won {
				t.Fatalf("claim %s/%s: %+v %v", tenant, key, res, err)
			}
			if key == "indet" {
				if err := inEU.MarkIndeterminate(ctx, rec.ID, rec.Owner, now); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	list := func(s *dynamo.Store, stale bool, tenant string) []string {
		t.Helper()
		f := s.ListIndeterminate
		if stale {
			f = s.ListStale
		}
		recs, next, err := f(ctx, tenant, "", 0, now)
		if err != nil || next != "" {
			t.Fatalf("list (stale %v) %q: next %q, %v", stale, tenant, next, err)
		}
		var got []string
		for _, r := range recs {
			got = append(got, r.Scope.Tenant+"/"+r.Scope.Key)
		}
		return got
	}
	moved := store("us-east-1", func(tenant string) (dynamo.Failover, bool) {
		return dynamo.Failover{Region: "us-east-1", At: now}, tenant == "acme"
	})
	for _, tc := range []struct {
		name   string
		s      *dynamo.Store
		stale  bool
		tenant string
		want   string
	}{
		{"acme from us", inUS, false, "acme", "acme/indet"},
		{"globex from eu", inEU, false, "globex", "globex/indet"},
		{"all tenants read eu locally", inEU, false, "", "acme/indet"},
		{"all tenants read us locally", inUS, false, "", "globex/indet"},
		{"stale acme from us", inUS, true, "acme", "acme/stale"},
		{"stale globex from eu", inEU, true, "globex", "globex/stale"},
		{"stale, all tenants, in us", inUS, true, "", "globex/stale"},
		{"acme re-homed to us", moved, false, "acme", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(list(tc.s, tc.stale, tc.tenant), ","); got != tc.want {
				t.Fatalf("listed %q, want %q", got, tc.want)
			}
		})
	}

	// An operator in us resolves acme's record: the write goes to eu.
	id := idemkit.Scope{Tenant: "acme", Operation: "POST /charges", Key: "indet"}.ID(false)
	res := idemkit.Resolution{As: idemkit.StateCompleted, Operator: "alice", Reason: "charged", Snapshot: &idemkit.Snapshot{Status: 201, Body: []byte(`{"id":"ch_1"}`)}}
	if _, err := inUS.Resolve(ctx, id, res, now); err != nil {
		t.Fatal(err)
	}
	if r, err := inEU.Get(ctx, id, now); err != nil || r.State != idemkit.StateCompleted || string(r.Snapshot.Body) != `{"id":"ch_1"}` {
		t.Fatalf("acme's record in its home region after a resolve from us: %+v, %v", r, err)
	}
	if got := list(inEU, false, ""); len(got) != 0 {
		t.Fatalf("still listed after the resolve: %v", got)
	}
}
