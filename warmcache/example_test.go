package warmcache_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/warmcache"
)

// The cache goes between the guard and its store (here memstore; in a
// Lambda, a dynamo.Store). The first request runs and fills the cache; its
// retry is answered from the cache without a store call.
func ExampleNew() {
	cache := warmcache.New(memstore.New(), warmcache.Config{})
	g, err := idemkit.New(idemkit.Config{Store: cache})
	if err != nil {
		panic(err)
	}
	req := idemkit.Request{
		Scope:       idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "k-001"},
		Fingerprint: "v2:sha256:…", // from package fingerprint
	}
	create := func(ctx context.Context) (*idemkit.Snapshot, error) {
		return &idemkit.Snapshot{Status: http.StatusCreated, Body: []byte(`{"id":"ord_1"}`)}, nil
	}
	for range 2 {
		snap, replayed, err := g.Do(context.Background(), req, create)
		if err != nil {
			panic(err)
		}
		fmt.Println(snap.Status, replayed)
	}
	s := cache.Stats()
	fmt.Printf("hits %d, misses %d, entries %d\n", s.Hits, s.Misses, s.Entries)
	// Output:
	// 201 false
	// 201 true
	// hits 1, misses 1, entries 1
}
