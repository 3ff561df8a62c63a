package idemclient

import "github.com/idemkit/idemkit/internal/uuidv7"

// NewKeyAt is the key the Transport mints, for the tests: a UUIDv7 key of
// a given time.
var NewKeyAt = uuidv7.At
