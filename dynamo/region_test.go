package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/dynalite"
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
		if err := dynamo.CreateTable(context.Background(), c, table); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	return clients[0], clients[1], table
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

func guard(t *testing.T, s idemkit.Store) *idemkit.Guard {
	t.Helper()
	g, err := idemkit.New(idemkit.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestTwoRegions(t *testing.T) {
	eu, us, table := twoRegions(t)
	ctx := context.Background()

	t.Run("unpinned stores both execute", func(t *testing.T) {
		// The hazard pinning exists for: each region claims in its own
		// replica, and both win.
		inEU, _ := dynamo.New(eu, table, testOptions())
		inUS, _ := dynamo.New(us, table, testOptions())
		req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /charges", Key: "unpinned"}, Fingerprint: "v1:sha256:r"}
		if n := raceRegions(t, []*idemkit.Guard{guard(t, inEU), guard(t, inUS)}, req, 5); n != 2 {
			t.Fatalf("the handler ran %d times; this test documents that without pinning it runs once per region", n)
		}
	})

	regions := func(local string) dynamo.Regions {
		return dynamo.Regions{
			Clients: map[string]dynamo.Client{"eu-west-1": eu, "us-east-1": us},
			Home: func(tenant string) string {
				if tenant == "globex" {
					return "us-east-1"
				}
				return "eu-west-1"
			},
			Local: local,
		}
	}
	inEU, err := dynamo.NewRegional(regions("eu-west-1"), table, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	inUS, err := dynamo.NewRegional(regions("us-east-1"), table, testOptions())
	if err != nil {
		t.Fatal(err)
	}

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
				if r, err := s.Get(ctx, id, base()); err != nil || r.State != idemkit.StateCompleted {
					t.Fatalf("Get through a regional store: %v, %v", r, err)
				}
			}
		}
	})

	t.Run("home unreachable fails closed unless re-homed", func(t *testing.T) {
		r := regions("us-east-1")
		r.Clients = map[string]dynamo.Client{"eu-west-1": endpointClient(closedPort(t)), "us-east-1": us}
		down, err := dynamo.NewRegional(r, table, dynamo.Options{})
		if err != nil {
			t.Fatal(err)
		}
		req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /charges", Key: "failover"}, Fingerprint: "v1:sha256:r"}
		var execs atomic.Int32
		if _, _, err := guard(t, down).Do(ctx, req, okHandler(&execs, "paid")); !errors.Is(err, idemkit.ErrStoreUnavailable) || execs.Load() != 0 {
			t.Fatalf("Do with the home region down: %v, ran %d times; want ErrStoreUnavailable, not run", err, execs.Load())
		}
		// An unknown home region fails closed too.
		r.Home = func(string) string { return "ap-south-1" }
		lost, _ := dynamo.NewRegional(r, table, dynamo.Options{})
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
		moved, _ := dynamo.NewRegional(r, table, dynamo.Options{})
		var fe *dynamo.FailoverError
		if _, _, err := guard(t, moved).Do(ctx, req, okHandler(&execs, "paid")); !errors.As(err, &fe) || execs.Load() != 0 {
			t.Fatalf("Do after re-homing, a key used before: %v, ran %d times; want a *FailoverError", err, execs.Load())
		}
		req.Scope.Key = uuidV7At(time.Now())
		if _, _, err := guard(t, moved).Do(ctx, req, okHandler(&execs, "paid")); err != nil || execs.Load() != 1 {
			t.Fatalf("Do after re-homing, a new UUIDv7 key: %v, ran %d times", err, execs.Load())
		}
	})
}
