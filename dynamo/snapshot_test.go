package dynamo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net/http"
	"strings"
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
			s := storeOn(t, cc, newTable(t, c), dynamo.Options{})
			g := guard(t, s)
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
	s := storeOn(t, cc, newTable(t, c), dynamo.Options{MaxItemSize: limit})
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
		rec := create(t, s, &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Owner: "o", LeaseUntil: now.Add(60e9), ExpiresAt: now.Add(3600e9), CreatedAt: now})
		done := *rec
		done.State, done.CompletedAt, done.Version = idemkit.StateCompleted, now, "v-done"
		done.Snapshot = &idemkit.Snapshot{Status: 200, Body: tc.body}
		if met, err := s.Replace(ctx, &done, rec); err != nil || met != nil {
			t.Fatal(met, err)
		}
		got, err := s.Get(ctx, rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Snapshot.Omitted != tc.omitted || (!tc.omitted && !bytes.Equal(got.Snapshot.Body, tc.body)) || (tc.omitted && len(got.Snapshot.Body) != 0) {
			t.Fatalf("%d: stored omitted=%v with %d bytes, want omitted=%v", i, got.Snapshot.Omitted, len(got.Snapshot.Body), tc.omitted)
		}
		if done.Snapshot.Omitted || len(done.Snapshot.Body) != len(tc.body) {
			t.Fatal("Replace modified the caller's snapshot")
		}
	}
	if m := cc.MaxItem(); m > limit {
		t.Fatalf("an item of %d bytes was sent, cap %d", m, limit)
	}
}

// TestHeadersOverTheCap: a snapshot whose allow-listed headers alone do not
// fit the item is never stored without them as if complete: whatever its
// body (none, small, large), it is stored Omitted with its status and
// Location, so that a replay answers "response not stored" instead of the
// status without the headers the response had.
func TestHeadersOverTheCap(t *testing.T) {
	const limit = 8 << 10
	c := client(t)
	s := storeOn(t, c, newTable(t, c), dynamo.Options{MaxItemSize: limit})
	ctx := context.Background()
	big := strings.Repeat("v", limit)
	for i, body := range [][]byte{nil, {}, []byte(`{"id":"ord_1"}`), randomBytes(limit)} {
		now := base()
		sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "hdr-" + string(rune('a'+i))}
		rec := create(t, s, &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Owner: "o", LeaseUntil: now.Add(60e9), ExpiresAt: now.Add(3600e9), CreatedAt: now})
		done := *rec
		done.State, done.CompletedAt, done.Version = idemkit.StateCompleted, now, "v-done"
		done.Snapshot = &idemkit.Snapshot{Status: 201, Body: body,
			Header: http.Header{"Location": {"/orders/1"}, "Content-Type": {"application/json"}, "X-Big": {big}}}
		if met, err := s.Replace(ctx, &done, rec); err != nil || met != nil {
			t.Fatalf("body %d bytes: Replace: %+v, %v", len(body), met, err)
		}
		got, err := s.Get(ctx, rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		g := got.Snapshot
		if !g.Omitted || len(g.Body) != 0 || g.Status != 201 || g.Header.Get("Location") != "/orders/1" {
			t.Errorf("body %d bytes, %d-byte header: stored status %d, omitted %v, %d body bytes, header %v; want omitted with the status and Location",
				len(body), len(big), g.Status, g.Omitted, len(g.Body), g.Header)
		}
	}
}

// TestCompressibleBodyOverTheDecodeBound: a response larger than the
// store ever decodes (dynamo.MaxDecodedBody, 16 MB, a bound against
// decompression bombs) compresses to a few kilobytes, so it fits the item.
// Stored so, it could never be read back: every retry would get
// ErrCorruptRecord (a 500) until the record expired. Such a body is
// stored omitted instead, like one too large for the item: retries get
// ErrSnapshotOmitted naming the outcome. A body at the bound is replayed.
func TestCompressibleBodyOverTheDecodeBound(t *testing.T) {
	s, _, _ := newStore(t, dynamo.Options{})
	g := guard(t, s)
	for _, tc := range []struct {
		name    string
		size    int
		omitted bool
	}{
		{"at the bound", dynamo.MaxDecodedBody, false},
		{"one byte over", dynamo.MaxDecodedBody + 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := bytes.Repeat([]byte("a,b,c\n"), tc.size/6+1)[:tc.size]
			req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /exports", Key: "big-" + tc.name}, Fingerprint: "v2:sha256:b"}
			var runs atomic.Int32
			h := func(context.Context) (*idemkit.Snapshot, error) {
				runs.Add(1)
				return &idemkit.Snapshot{Status: 201, Body: body}, nil
			}
			snap, replayed, err := g.Do(context.Background(), req, h)
			if err != nil || replayed || len(snap.Body) != tc.size {
				t.Fatalf("first Do: replayed %v, err %v; the caller must get its response", replayed, err)
			}
			snap, replayed, err = g.Do(context.Background(), req, h)
			switch {
			case tc.omitted:
				if !errors.Is(err, idemkit.ErrSnapshotOmitted) {
					t.Fatalf("retry: %v, want ErrSnapshotOmitted", err)
				}
			case err != nil || !replayed || !bytes.Equal(snap.Body, body):
				t.Fatalf("retry: replayed %v, err %v; want the body replayed", replayed, err)
			}
			if n := runs.Load(); n != 1 {
				t.Fatalf("the handler ran %d times", n)
			}
		})
	}
}

// TestMaxItemSizeAboveTheLimit: a MaxItemSize above DynamoDB's 400 KB
// item limit is lowered to it, so that a body too large for any item is
// stored omitted and retries get ErrSnapshotOmitted, instead of a
// completion DynamoDB refuses (the record would stay in flight and end
// indeterminate).
func TestMaxItemSizeAboveTheLimit(t *testing.T) {
	s, _, _ := newStore(t, dynamo.Options{MaxItemSize: 4 << 20})
	g := guard(t, s)
	body := make([]byte, dynamo.MaxItemSizeLimit+1)
	rand.New(rand.NewSource(3)).Read(body) // incompressible
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /exports", Key: "over-the-limit"}, Fingerprint: "v2:sha256:b"}
	h := func(context.Context) (*idemkit.Snapshot, error) {
		return &idemkit.Snapshot{Status: 201, Body: body}, nil
	}
	if snap, _, err := g.Do(context.Background(), req, h); err != nil || len(snap.Body) != len(body) {
		t.Fatalf("first Do: %v; the caller must get its response", err)
	}
	rec, err := s.Get(context.Background(), req.Scope.ID(false))
	if err != nil || rec.State != idemkit.StateCompleted || rec.Snapshot == nil || !rec.Snapshot.Omitted {
		t.Fatalf("stored %+v, %v; want completed without its body", rec, err)
	}
	if _, _, err := g.Do(context.Background(), req, h); !errors.Is(err, idemkit.ErrSnapshotOmitted) {
		t.Fatalf("retry: %v, want ErrSnapshotOmitted", err)
	}
}
