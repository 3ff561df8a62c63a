package idemkit_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
)

// TestCloneIsDeep: a clone shares nothing with its original: changing the
// clone's snapshot (status, header values, body bytes) or its resolution
// (fields and its own copy of the answer) leaves the original as it was.
// Stores and the warm cache copy records with Clone; a shallow copy would
// let a caller change a stored response through a record it was given.
func TestCloneIsDeep(t *testing.T) {
	now := time.Now()
	orig := &idemkit.Record{
		ID: "o1|1:a1:b1:c", State: idemkit.StateCompleted, Owner: "a",
		Snapshot: &idemkit.Snapshot{Status: 201, Header: http.Header{"Location": {"/orders/1"}}, Body: []byte("first")},
		Resolution: &idemkit.Resolution{As: idemkit.StateCompleted, Operator: "ops", ResolvedAt: now,
			Snapshot: &idemkit.Snapshot{Status: 200, Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("operator")}},
	}
	c := orig.Clone()
	for _, s := range []*idemkit.Snapshot{c.Snapshot, c.Resolution.Snapshot} {
		s.Status = 599
		s.Body[0] = 'X'
		for k := range s.Header {
			s.Header[k][0] = "scribbled"
		}
		s.Header.Set("X-Scribbled", "1")
	}
	c.Resolution.Operator = "scribbled"

	if s := orig.Snapshot; s.Status != 201 || string(s.Body) != "first" || s.Header.Get("Location") != "/orders/1" || len(s.Header) != 1 {
		t.Errorf("original snapshot changed through its clone: %+v", s)
	}
	r := orig.Resolution
	if r.Operator != "ops" {
		t.Errorf("original resolution changed through its clone: %+v", r)
	}
	if s := r.Snapshot; s.Status != 200 || string(s.Body) != "operator" || s.Header.Get("Content-Type") != "text/plain" || len(s.Header) != 1 {
		t.Errorf("original resolution's snapshot changed through its clone: %+v", s)
	}
	if (*idemkit.Record)(nil).Clone() != nil || (*idemkit.Snapshot)(nil).Clone() != nil {
		t.Error("Clone of nil is not nil")
	}
}
