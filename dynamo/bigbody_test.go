package dynamo_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
)

// TestCompressibleBodyOverTheDecodeBound: a response larger than the
// store ever decodes (dynamo.MaxDecodedBody, 16 MB, a bound against
// decompression bombs) compresses to a few kilobytes, so it fits the item.
// Stored so, it could never be read back: every retry would get
// ErrCorruptRecord (a 500) until the record expired. Such a body is
// stored omitted instead, like one too large for the item: retries get
// ErrSnapshotOmitted naming the outcome. A body at the bound is replayed.
func TestCompressibleBodyOverTheDecodeBound(t *testing.T) {
	s, _, _ := newStore(t, dynamo.Options{})
	g, err := idemkit.New(idemkit.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
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
	g, err := idemkit.New(idemkit.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, dynamo.MaxItemSizeLimit+1)
	rand.New(rand.NewSource(3)).Read(body) // incompressible
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /exports", Key: "over-the-limit"}, Fingerprint: "v2:sha256:b"}
	h := func(context.Context) (*idemkit.Snapshot, error) {
		return &idemkit.Snapshot{Status: 201, Body: body}, nil
	}
	if snap, _, err := g.Do(context.Background(), req, h); err != nil || len(snap.Body) != len(body) {
		t.Fatalf("first Do: %v; the caller must get its response", err)
	}
	rec, err := s.Get(context.Background(), req.Scope.ID(false), time.Now())
	if err != nil || rec.State != idemkit.StateCompleted || rec.Snapshot == nil || !rec.Snapshot.Omitted {
		t.Fatalf("stored %+v, %v; want completed without its body", rec, err)
	}
	if _, _, err := g.Do(context.Background(), req, h); !errors.Is(err, idemkit.ErrSnapshotOmitted) {
		t.Fatalf("retry: %v, want ErrSnapshotOmitted", err)
	}
}
