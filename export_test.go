package idemkit

// CallerCancelled is callerCancelled, for the tests of package idemkit_test.
var CallerCancelled = callerCancelled
