package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/idemkit/idemkit"
)

// lateComplete stores the late completion of the run that claimed rec, as
// the engine makes it: in place of the record stored while that is still
// the run's, live, in flight or indeterminate without an operator's
// resolution; otherwise it stores nothing and returns ErrNotOwner.
func lateComplete(ctx context.Context, s idemkit.Store, rec *idemkit.Record, snap *idemkit.Snapshot) error {
	cur, err := s.Get(ctx, rec.ID)
	if err != nil {
		return err
	}
	now := time.Now()
	if !cur.Live(now) || cur.Owner != rec.Owner ||
		cur.State != idemkit.StateInFlight && (cur.State != idemkit.StateIndeterminate || cur.Resolution != nil) {
		return idemkit.ErrNotOwner
	}
	done := cur.Clone()
	done.State, done.Cause, done.CompletedAt, done.Snapshot, done.Version = idemkit.StateCompleted, "", now, snap.Clone(), "late-"+rec.Owner
	met, err := s.Replace(ctx, done, cur)
	if err == nil && met != nil {
		return idemkit.ErrNotOwner // it changed meanwhile
	}
	return err
}

// beforeWrite is a store that calls before once, just before its first
// Replace reaches the store: between a command's read and its write.
type beforeWrite struct {
	idemkit.OperatorStore
	once   sync.Once
	before func(ctx context.Context)
}

func (b *beforeWrite) Replace(ctx context.Context, rec, prev *idemkit.Record) (*idemkit.Record, error) {
	b.once.Do(func() { b.before(ctx) })
	return b.OperatorStore.Replace(ctx, rec, prev)
}

// writesFail is a store whose every Replace fails as an outage does, and
// reaches nothing.
type writesFail struct{ idemkit.OperatorStore }

func (writesFail) Replace(context.Context, *idemkit.Record, *idemkit.Record) (*idemkit.Record, error) {
	return nil, &idemkit.StoreError{Op: "replace", Err: errors.New("throttled")}
}
