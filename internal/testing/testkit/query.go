package testkit

// QueryRetry is the raw query string of a first request and of its
// retry with the same key, and whether the retry is a replay.
type QueryRetry struct {
	Name          string
	First, Second string
	Replay        bool
}

// QueryRetries are the query strings every front must fingerprint alike.
// Pairs that net/url refuses (a semicolon, a bad escape) still name what
// the handler sees, so they count: dropped, they would let a key reused
// for another resource replay its response.
var QueryRetries = []QueryRetry{
	{Name: "semicolon in a value", First: "account=1;x", Second: "account=2;x"},
	{Name: "bad escape changed", First: "a=%zz&b=1", Second: "a=%yy&b=1"},
	{Name: "bad escape added", First: "b=1", Second: "a=%zz&b=1"},
	{Name: "semicolon pair added", First: "b=1", Second: "b=1&a=1;2"},
	{Name: "bad escape, then its text escaped", First: "a=%zz&b=1", Second: "a=%25zz&b=1"},
	{Name: "semicolon, then escaped", First: "account=1;x", Second: "account=1%3Bx"},
	{Name: "same query with a bad escape", First: "a=%zz&b=1", Second: "a=%zz&b=1", Replay: true},
	{Name: "same query with a semicolon", First: "account=1;x", Second: "account=1;x", Replay: true},
	{Name: "space spelled two ways", First: "note=a%20b", Second: "note=a+b", Replay: true},
	{Name: "escaped letter", First: "a=%7A", Second: "a=z", Replay: true},
	{Name: "parameter order", First: "a=1&b=2", Second: "b=2&a=1", Replay: true},
	{Name: "empty pairs", First: "a=1&&b=2&", Second: "a=1&b=2", Replay: true},
}
