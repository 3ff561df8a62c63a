package idemclient

// NewKeyAt is newKeyAt, for the tests: a UUIDv7 key of a given time.
var NewKeyAt = newKeyAt
