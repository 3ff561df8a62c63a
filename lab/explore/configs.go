package explore

import (
	"time"

	"github.com/idemkit/idemkit"
)

// Configs returns the bounds explored: make test's (deep false), or make
// model's (deep true), each under both stale policies.
func Configs(deep bool) []Config {
	var out []Config
	for _, pol := range []idemkit.StalePolicy{idemkit.FailClosed, idemkit.Takeover} {
		// Three requests on K, two with one body, one with another, from
		// instances whose clocks are off by up to a second either way;
		// one network fault.
		clients := Config{Name: "clients/" + pol.String(), Policy: pol, Faults: 1, Depth: 7, Horizon: time.Minute,
			Clients: []ClientSpec{{Name: "A", Body: 1, Retries: 1}, {Name: "B", Body: 1, Skew: time.Second}, {Name: "C", Body: 2, Skew: -time.Second}}}
		// One request and its retries, and the operator twice, while
		// leases end and decisions become acceptable.
		operator := Config{Name: "operator/" + pol.String(), Policy: pol, Operators: 2, Depth: 18, Horizon: 20 * time.Minute,
			Clients: []ClientSpec{{Name: "A", Body: 1, Retries: 1}}}
		if deep {
			clients.Depth = 8
			clients.Clients[1].Retries = 1
			operator.Depth = 20
		}
		out = append(out, clients, operator)
	}
	// A record kept no longer than its run needs (a second's retention),
	// and a retrying host whose clock runs 30 s ahead, past the lease
	// margin and within the minute a record's life tolerates: under
	// FailClosed it may mark the lease ended early, never find the record
	// expired while the run may still go on. (Under Takeover a host past
	// the lease margin may take over early: the skew a lease tolerates.)
	fast := Config{Name: "fastclock/" + idemkit.FailClosed.String(), Policy: idemkit.FailClosed, Depth: 9, Horizon: 5 * time.Minute,
		Retention: time.Second, Clients: []ClientSpec{{Name: "A", Body: 1}, {Name: "B", Body: 1, Skew: 30 * time.Second, Retries: 2}}}
	if deep {
		fast.Faults, fast.Depth = 1, 10
	}
	return append(out, fast)
}
