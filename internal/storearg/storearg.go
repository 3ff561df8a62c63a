// Package storearg checks the arguments of a store call against the
// preconditions written on idemkit.Store, so that every store of this
// module refuses the same calls. Each error wraps idemkit.ErrRecordInvalid
// and names what is missing; the store adds its own name and the method.
package storearg

import (
	"fmt"

	"github.com/idemkit/idemkit"
)

var (
	errNoID    = fmt.Errorf("%w: empty record ID", idemkit.ErrRecordInvalid)
	errNoOwner = fmt.Errorf("%w: empty owner token", idemkit.ErrRecordInvalid)
)

// Claim checks the record of a claim: an ID, an owner, a tenant and State
// in_flight.
func Claim(rec *idemkit.Record) error {
	return record(rec, idemkit.StateInFlight)
}

// Reclaim checks the record of a reclaim, as Claim, and the record it
// replaces: one of the same ID, with an owner.
func Reclaim(rec, prev *idemkit.Record) error {
	if err := Claim(rec); err != nil {
		return err
	}
	switch {
	case prev == nil:
		return fmt.Errorf("%w: reclaim of %q without the record it replaces", idemkit.ErrRecordInvalid, rec.ID)
	case prev.ID != rec.ID:
		return fmt.Errorf("%w: reclaim of %q in place of record %q", idemkit.ErrRecordInvalid, rec.ID, prev.ID)
	case prev.Owner == "":
		return fmt.Errorf("%w: reclaim of %q in place of a record without an owner token", idemkit.ErrRecordInvalid, rec.ID)
	}
	return nil
}

// Complete checks the record of a completion: an ID, an owner, a tenant,
// State completed and a Snapshot.
func Complete(rec *idemkit.Record) error {
	if err := record(rec, idemkit.StateCompleted); err != nil {
		return err
	}
	if rec.Snapshot == nil {
		return fmt.Errorf("%w: completed record %q without a snapshot", idemkit.ErrRecordInvalid, rec.ID)
	}
	return nil
}

func record(rec *idemkit.Record, want idemkit.State) error {
	switch {
	case rec == nil:
		return fmt.Errorf("%w: nil record", idemkit.ErrRecordInvalid)
	case rec.ID == "":
		return errNoID
	case rec.Owner == "":
		return fmt.Errorf("%w: record %q without an owner token", idemkit.ErrRecordInvalid, rec.ID)
	case rec.Scope.Tenant == "":
		return fmt.Errorf("%w: record %q without a tenant", idemkit.ErrRecordInvalid, rec.ID)
	case rec.State != want:
		return fmt.Errorf("%w: record %q in state %q, want %s", idemkit.ErrRecordInvalid, rec.ID, rec.State, want)
	}
	return nil
}

// Owned checks the id and owner of a write fenced on the owner token
// (Release, Extend, MarkUnknown, MarkIndeterminate): neither is empty.
func Owned(id, owner string) error {
	if id == "" {
		return errNoID
	}
	if owner == "" {
		return errNoOwner
	}
	return nil
}

// ID checks the id of a read: it is not empty.
func ID(id string) error {
	if id == "" {
		return errNoID
	}
	return nil
}

// Resolution checks a resolution of the record with id and owner: a
// non-empty id and owner, and As completed with a Snapshot, or failed.
func Resolution(id, owner string, res idemkit.Resolution) error {
	if err := Owned(id, owner); err != nil {
		return err
	}
	switch {
	case res.As == idemkit.StateCompleted && res.Snapshot == nil:
		return fmt.Errorf("%w: resolve %q as completed without a snapshot", idemkit.ErrRecordInvalid, id)
	case res.As != idemkit.StateCompleted && res.As != idemkit.StateFailed:
		return fmt.Errorf("%w: resolve %q as %q: want completed or failed", idemkit.ErrRecordInvalid, id, res.As)
	}
	return nil
}
