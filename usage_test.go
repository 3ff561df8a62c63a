package idemkit_test

import (
	"context"
	"sync"
	"testing"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/usage"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/observe"
)

// TestUsageConcurrentAdds: a handler may make store calls from several
// goroutines; each call is counted once and the race detector stays quiet.
func TestUsageConcurrentAdds(t *testing.T) {
	var got observe.Usage
	obs := observe.ObserverFunc(func(_ context.Context, e observe.Event) { got = e.Usage })
	g, err := idemkit.New(idemkit.Config{Store: memstore.New(), Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 50
	_, _, err = g.Do(context.Background(), req("k"), func(ctx context.Context) (*idemkit.Snapshot, error) {
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					idemkit.AddUsage(ctx, 0.5, 1)
				}
			}()
		}
		wg.Wait()
		if u, ok := usage.From(ctx); !ok || u.Calls < workers*each {
			t.Errorf("usage.From inside the handler = %+v %v", u, ok)
		}
		return &idemkit.Snapshot{Status: 201}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The handler's adds plus the claim and the completion.
	if want := workers*each + 2; got.Calls != want {
		t.Fatalf("Usage.Calls = %d, want %d", got.Calls, want)
	}
	if got.ReadUnits != workers*each*0.5 {
		t.Fatalf("Usage.ReadUnits = %v, want %v", got.ReadUnits, workers*each*0.5)
	}
}
