// Package scribble writes over what a store handed back, for the tests
// that show a store keeps its own copies: after a scribble on a record or
// snapshot the store returned, the store must still hold what was written.
//
// It is a package of its own, apart from testkit, because it imports
// idemkit, which the tests inside package idemkit cannot.
package scribble

import (
	"time"

	"github.com/idemkit/idemkit"
)

// Record changes every part of r a store could share; a nil r is left.
func Record(r *idemkit.Record) {
	if r == nil {
		return
	}
	r.Owner, r.Fingerprint, r.State, r.Version = "scribbled", "scribbled", idemkit.StateFailed, "scribbled"
	r.Scope.Key = "scribbled"
	r.LeaseUntil = r.LeaseUntil.Add(time.Hour)
	Snapshot(r.Snapshot)
	if r.Resolution != nil {
		r.Resolution.Operator = "scribbled"
		Snapshot(r.Resolution.Snapshot)
	}
}

// Snapshot changes s's status, every byte of its body and every header
// value, and adds a header; a nil s is left.
func Snapshot(s *idemkit.Snapshot) {
	if s == nil {
		return
	}
	s.Status = 599
	for i := range s.Body {
		s.Body[i] = 'X'
	}
	for k, vs := range s.Header {
		for i := range vs {
			vs[i] = "scribbled"
		}
		s.Header[k] = vs
	}
	s.Header.Set("X-Scribbled", "1")
}
