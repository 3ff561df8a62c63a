package orders_test

import "time"

// fixedNow is a timestamp the tests store in orders and payments and read
// back; it is data, never a clock: no deadline, timer or lease is built
// from it.
var fixedNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
