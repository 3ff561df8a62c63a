package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/recordid"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/uuidv7"
)

// twoRegions starts two independent servers standing for the replicas of
// a global table in two regions, inside the replication lag (they never
// replicate), and creates the table in both.
func twoRegions(t *testing.T) (eu, us *dynamodb.Client, table string) {
	t.Helper()
	table = dynalite.TableName(t)
	var clients []*dynamodb.Client
	for range 2 {
		c, err := dynalite.NewClient(context.Background(), dynalite.NewServer(t).Endpoint())
		if err != nil {
			t.Fatal(err)
		}
		if err := dynamo.CreateTable(context.Background(), c, table, dynamo.Options{}); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	return clients[0], clients[1], table
}

// homeRegions returns the regions of eu (eu-west-1) and us (us-east-1),
// globex's home us-east-1 and every other tenant's eu-west-1, read from
// local, with override (nil: none).
func homeRegions(eu, us dynamo.Client, local string, override func(string) (dynamo.Failover, bool)) dynamo.Regions {
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

// raceRegions sends n requests for one scope through each guard at once
// and returns how many times the handler ran.
func raceRegions(t *testing.T, guards []*idemkit.Guard, req idemkit.Request, n int) int32 {
	t.Helper()
	var (
		execs atomic.Int32
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for _, g := range guards {
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, _, err := g.Do(context.Background(), req, okHandler(&execs, "paid"))
				if err != nil && !errors.Is(err, idemkit.ErrInFlight) {
					t.Errorf("Do: %v", err)
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	return execs.Load()
}

func TestTwoRegions(t *testing.T) {
	eu, us, table := twoRegions(t)
	ctx := context.Background()

	t.Run("unpinned stores both execute", func(t *testing.T) {
		// The hazard pinning exists for: each region claims in its own
		// replica, and both win.
		inEU, err := dynamo.New(eu, table, testOptions())
		if err != nil {
			t.Fatal(err)
		}
		inUS, err := dynamo.New(us, table, testOptions())
		if err != nil {
			t.Fatal(err)
		}
		req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /charges", Key: "unpinned"}, Fingerprint: "v1:sha256:r"}
		if n := raceRegions(t, []*idemkit.Guard{guard(t, inEU), guard(t, inUS)}, req, 5); n != 2 {
			t.Fatalf("the handler ran %d times; this test documents that without pinning it runs once per region", n)
		}
	})

	regions := func(local string) dynamo.Regions { return homeRegions(eu, us, local, nil) }
	inEU := regional(t, regions("eu-west-1"), table, testOptions())
	inUS := regional(t, regions("us-east-1"), table, testOptions())

	t.Run("pinned stores execute once", func(t *testing.T) {
		guards := []*idemkit.Guard{guard(t, inEU), guard(t, inUS)}
		for i, tenant := range []string{"acme", "globex", "acme", "globex"} {
			req := idemkit.Request{Scope: idemkit.Scope{Tenant: tenant, Operation: "POST /charges", Key: fmt.Sprint("pinned-", i)}, Fingerprint: "v1:sha256:r"}
			if n := raceRegions(t, guards, req, 10); n != 1 {
				t.Fatalf("tenant %s: the handler ran %d times, want once", tenant, n)
			}
			// The record lives in the home replica only, and both regions
			// read it there by its ID.
			home, other := eu, us
			if tenant == "globex" {
				home, other = us, eu
			}
			id := req.Scope.ID(false)
			for _, c := range []struct {
				name   string
				client *dynamodb.Client
				want   bool
			}{{"home", home, true}, {"other", other, false}} {
				out, err := c.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{dynamo.AttrID: S(id)}})
				if err != nil {
					t.Fatal(err)
				}
				if got := len(out.Item) > 0; got != c.want {
					t.Fatalf("tenant %s: record in the %s replica: %v, want %v", tenant, c.name, got, c.want)
				}
			}
			for _, s := range []*dynamo.Store{inEU, inUS} {
				if r, err := s.Get(ctx, id); err != nil || r.State != idemkit.StateCompleted {
					t.Fatalf("Get through a regional store: %v, %v", r, err)
				}
			}
		}
	})

	t.Run("home unreachable fails closed unless re-homed", func(t *testing.T) {
		r := regions("us-east-1")
		r.Clients = map[string]dynamo.Client{"eu-west-1": endpointClient(closedPort(t)), "us-east-1": us}
		down := regional(t, r, table, dynamo.Options{})
		req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /charges", Key: "failover"}, Fingerprint: "v1:sha256:r"}
		var execs atomic.Int32
		if _, _, err := guard(t, down).Do(ctx, req, okHandler(&execs, "paid")); !errors.Is(err, idemkit.ErrStoreUnavailable) || execs.Load() != 0 {
			t.Fatalf("Do with the home region down: %v, ran %d times; want ErrStoreUnavailable, not run", err, execs.Load())
		}
		// An unknown home region fails closed too.
		r.Home = func(string) string { return "ap-south-1" }
		lost, err := dynamo.NewRegional(r, table, dynamo.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := guard(t, lost).Do(ctx, req, okHandler(&execs, "paid")); !errors.Is(err, idemkit.ErrStoreUnavailable) || execs.Load() != 0 {
			t.Fatalf("Do with an unknown home region: %v", err)
		}
		// An operator fails acme over to us-east-1. The key was used
		// before the failover, so eu may hold its record: it stays
		// refused (TestFailoverFence); a key first used after the
		// failover runs.
		at := time.Now().Add(-time.Hour)
		r.Override = func(tenant string) (dynamo.Failover, bool) {
			return dynamo.Failover{Region: "us-east-1", At: at}, tenant == "acme"
		}
		moved, err := dynamo.NewRegional(r, table, dynamo.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var fe *dynamo.FailoverError
		if _, _, err := guard(t, moved).Do(ctx, req, okHandler(&execs, "paid")); !errors.As(err, &fe) || execs.Load() != 0 {
			t.Fatalf("Do after re-homing, a key used before: %v, ran %d times; want a *FailoverError", err, execs.Load())
		}
		req.Scope.Key = uuidv7.At(time.Now())
		if _, _, err := guard(t, moved).Do(ctx, req, okHandler(&execs, "paid")); err != nil || execs.Load() != 1 {
			t.Fatalf("Do after re-homing, a new UUIDv7 key: %v, ran %d times", err, execs.Load())
		}
	})
}

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
	opts := testOptions()
	opts.IndexInFlight = true
	store := func(local string, override func(string) (dynamo.Failover, bool)) *dynamo.Store {
		s := regional(t, homeRegions(eu, us, local, override), table, opts)
		return s
	}
	inEU, inUS := store("eu-west-1", nil), store("us-east-1", nil)

	now := base()
	for _, tenant := range []string{"acme", "globex"} {
		for _, key := range []string{"indet", "stale"} {
			sc := idemkit.Scope{Tenant: tenant, Operation: "POST /charges", Key: key}
			rec := create(t, inEU, &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Fingerprint: "v1:f", Owner: "o-" + tenant + key,
				LeaseUntil: now.Add(-time.Second), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now.Add(-time.Minute)})
			if key == "indet" {
				change(t, inEU, rec, markedStale)
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
	if _, _, err := idemkit.Resolve(ctx, inUS, id, res, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if r, err := inEU.Get(ctx, id); err != nil || r.State != idemkit.StateCompleted || string(r.Snapshot.Body) != `{"id":"ch_1"}` {
		t.Fatalf("acme's record in its home region after a resolve from us: %+v, %v", r, err)
	}
	if got := list(inEU, false, ""); len(got) != 0 {
		t.Fatalf("still listed after the resolve: %v", got)
	}
}

// TestRegionalUnroutableID: an ID a regional store cannot route (not an
// idemkit ID, or one whose tenant is hashed), and a record whose tenant is
// too long for its ID to carry it, are a bad argument: ErrRecordInvalid,
// never ErrStoreUnavailable (a 503 telling the client to retry), and no
// call is made.
func TestRegionalUnroutableID(t *testing.T) {
	eu, _, table := twoRegions(t)
	cc := newCounting(eu)
	s := regional(t, dynamo.Regions{Clients: map[string]dynamo.Client{"eu-west-1": cc}, Home: func(string) string { return "eu-west-1" }, Local: "eu-west-1"}, table, testOptions())
	// A tenant over MaxTenantLen in a scope too long for a readable ID:
	// the ID is the hash alone.
	long := idemkit.Scope{Tenant: strings.Repeat("t", recordid.MaxTenantLen+1), Operation: "POST /" + strings.Repeat("o", 1100), Key: "k"}
	if !strings.HasPrefix(long.ID(false), "o1x|") {
		t.Fatalf("ID %.10q..., want a hashed tenant", long.ID(false))
	}
	ctx := context.Background()
	now := time.Now()
	for _, id := range []string{"not-an-id", long.ID(false)} {
		rec := &idemkit.Record{ID: id, Scope: long, State: idemkit.StateInFlight, Owner: "o", Version: "v1", LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}
		done := rec.Clone()
		done.State, done.Snapshot, done.Version = idemkit.StateCompleted, &idemkit.Snapshot{Status: 201}, "v2"
		calls := map[string]func() error{
			"Create":  func() error { _, err := s.Create(ctx, rec); return err },
			"Replace": func() error { _, err := s.Replace(ctx, done, rec); return err },
			"Get":     func() error { _, err := s.Get(ctx, id); return err },
		}
		for name, call := range calls {
			err := call()
			if !errors.Is(err, idemkit.ErrRecordInvalid) || errors.Is(err, idemkit.ErrStoreUnavailable) {
				t.Errorf("%s(%.20q...): %v; want ErrRecordInvalid, not ErrStoreUnavailable", name, id, err)
			}
		}
	}
	// A hashed ID of a tenant within MaxTenantLen carries it: Get routes it.
	hashed := idemkit.Scope{Tenant: "acme", Operation: "POST /" + strings.Repeat("o", 2100), Key: "k"}
	if id := hashed.ID(false); !strings.HasPrefix(id, "o1h|") {
		t.Fatalf("ID %.10q..., want a hashed ID carrying its tenant", id)
	}
	r := create(t, s, &idemkit.Record{ID: hashed.ID(false), Scope: hashed, State: idemkit.StateInFlight, Owner: "o", LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)})
	if got := get(t, s, r.ID); got.Version != r.Version {
		t.Fatalf("Get of a hashed ID: %+v", got)
	}
	if n := cc.Calls("PutItem") + cc.Calls("GetItem") + cc.Calls("UpdateItem"); n != 2 {
		t.Errorf("%d calls, want the routable record's Create and Get alone", n)
	}
}
