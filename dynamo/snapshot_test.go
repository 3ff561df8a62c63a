package dynamo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
)

// jsonOf returns a JSON document of about n bytes.
func jsonOf(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"orders":[`)
	for i := 0; b.Len() < n-2; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"ord_%08d","sku":"SKU-%d","qty":%d,"note":"%x"}`, i, i%97, i%7+1, rand.New(rand.NewSource(int64(i))).Int63())
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(7)).Read(b)
	return b
}

func TestSnapshotSize(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    []byte
		omitted bool
	}{
		{"390KB JSON round-trips compressed", jsonOf(390 << 10), false},
		{"1MB random bytes are omitted", randomBytes(1 << 20), true},
		{"360KB random bytes are omitted", randomBytes(360 << 10), true},
		{"340KB random bytes fit", randomBytes(340 << 10), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := client(t)
			cc := newCounting(c)
			s, err := dynamo.New(cc, newTable(t, c), dynamo.Options{})
			if err != nil {
				t.Fatal(err)
			}
			g, err := idemkit.New(idemkit.Config{Store: s})
			if err != nil {
				t.Fatal(err)
			}
			req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "GET /export", Key: "size-1"}, Fingerprint: "v1:sha256:s"}
			var execs atomic.Int32
			h := func(context.Context) (*idemkit.Snapshot, error) {
				execs.Add(1)
				return &idemkit.Snapshot{Status: 200, Header: http.Header{"Content-Type": {"application/json"}, "Location": {"/exports/1"}}, Body: tc.body}, nil
			}
			snap, replayed, err := g.Do(context.Background(), req, h)
			if err != nil || replayed || !bytes.Equal(snap.Body, tc.body) {
				t.Fatalf("first Do: replayed %v, err %v; the caller must get its response", replayed, err)
			}
			if m := cc.MaxItem(); m > dynamo.DefaultMaxItemSize {
				t.Fatalf("an item of %d bytes was sent, cap %d", m, dynamo.DefaultMaxItemSize)
			}
			snap, replayed, err = g.Do(context.Background(), req, h)
			if tc.omitted {
				var oe *idemkit.OutcomeError
				if !errors.Is(err, idemkit.ErrSnapshotOmitted) || !errors.As(err, &oe) || oe.Status != 200 || oe.Location != "/exports/1" {
					t.Fatalf("replay of an omitted body: %v, want ErrSnapshotOmitted naming 200 and the Location", err)
				}
			} else if err != nil || !replayed || !bytes.Equal(snap.Body, tc.body) {
				t.Fatalf("replay: replayed %v, err %v, body equal %v", replayed, err, snap != nil && bytes.Equal(snap.Body, tc.body))
			}
			if execs.Load() != 1 {
				t.Fatalf("handler ran %d times, want once", execs.Load())
			}
		})
	}
}

// TestSnapshotSizeCap: with a small cap, a body that fits only compressed
// is stored compressed and one that does not fit is left out; neither is
// sent over the cap.
func TestSnapshotSizeCap(t *testing.T) {
	const limit = 8 << 10
	c := client(t)
	cc := newCounting(c)
	s, err := dynamo.New(cc, newTable(t, c), dynamo.Options{MaxItemSize: limit})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, tc := range []struct {
		body    []byte
		omitted bool
	}{
		{jsonOf(30 << 10), false},
		{randomBytes(7 << 10), false},
		{randomBytes(9 << 10), true},
	} {
		sc := idemkit.Scope{Tenant: "acme", Operation: "POST /x", Key: fmt.Sprint("cap-", i)}
		now := base()
		rec := &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Owner: "o", LeaseUntil: now.Add(60e9), ExpiresAt: now.Add(3600e9), CreatedAt: now}
		if _, err := s.Claim(ctx, rec, now, idemkit.ClaimOptions{}); err != nil {
			t.Fatal(err)
		}
		done := *rec
		done.State, done.CompletedAt = idemkit.StateCompleted, now
		done.Snapshot = &idemkit.Snapshot{Status: 200, Body: tc.body}
		if err := s.Complete(ctx, &done, now); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, rec.ID, now)
		if err != nil {
			t.Fatal(err)
		}
		if got.Snapshot.Omitted != tc.omitted || (!tc.omitted && !bytes.Equal(got.Snapshot.Body, tc.body)) || (tc.omitted && len(got.Snapshot.Body) != 0) {
			t.Fatalf("%d: stored omitted=%v with %d bytes, want omitted=%v", i, got.Snapshot.Omitted, len(got.Snapshot.Body), tc.omitted)
		}
		if done.Snapshot.Omitted || len(done.Snapshot.Body) != len(tc.body) {
			t.Fatal("Complete modified the caller's snapshot")
		}
	}
	if m := cc.MaxItem(); m > limit {
		t.Fatalf("an item of %d bytes was sent, cap %d", m, limit)
	}
}
