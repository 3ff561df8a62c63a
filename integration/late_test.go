package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/internal/uuidv7"
)

// Late arrivals (docs/DESIGN.md, "Lifetime") end to end: through the v2 adapter against
// dynalite, a UUIDv7 key whose embedded time is older than the operation's
// record retention plus the tolerated clock skew is refused with 400
// key-expired, the handler does not run and nothing is stored; keys inside
// the skew, other operations with a longer retention, other key forms and
// operations with the check off are unaffected.
func TestLateArrivals(t *testing.T) {
	t.Parallel()
	store, _, _ := newStore(t, nil, dynamo.Options{})
	clk := testclock.New()
	t0 := clk.Now()
	const day = 24 * time.Hour
	g, err := idemkit.New(idemkit.Config{Store: store, Clock: clk, Operations: map[string]idemkit.Policy{
		"POST /payments": {RecordRetention: 7 * day, KeyClockSkew: time.Minute},
		"POST /notes":    {RecordRetention: day},
		"POST /wide":     {RecordRetention: 7 * day, KeyClockSkew: 10 * time.Minute},
		"POST /legacy":   {RecordRetention: day, IgnoreKeyTime: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	b := newBusiness(nil)
	cases := []struct {
		name, path, key string
		want            int // 400 key-expired or 201
	}{
		{"v7 older than retention+skew", "/payments", uuidv7.At(t0.Add(-7*day - 2*time.Minute)), 400},
		{"v7 older by a year", "/payments", uuidv7.At(t0.Add(-365 * day)), 400},
		{"v7 inside the skew", "/payments", uuidv7.At(t0.Add(-7*day - 30*time.Second)), 201},
		{"v7 inside retention", "/payments", uuidv7.At(t0.Add(-6 * day)), 201},
		{"v7 from the future", "/payments", uuidv7.At(t0.Add(time.Hour)), 201},
		{"v7 of 25h on a 24h operation", "/notes", uuidv7.At(t0.Add(-25 * time.Hour)), 400},
		{"v7 of 25h on a 7d operation", "/payments", uuidv7.At(t0.Add(-25 * time.Hour)), 201},
		{"wider skew accepts 7d+2m", "/wide", uuidv7.At(t0.Add(-7*day - 2*time.Minute)), 201},
		{"check off", "/legacy", uuidv7.At(t0.Add(-30 * day)), 201},
		{"v4 key", "/notes", uuid.NewString(), 201},
		{"opaque key", "/notes", "order-2024-01-01", 201},
		{"v7 uppercase old", "/notes", upper(uuidv7.At(t0.Add(-30 * day))), 400},
	}
	refused := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			op := "POST " + tc.path
			h := wrap(g, b, op)
			sc := idemkit.Scope{Tenant: "acme", Operation: op, Key: tc.key}
			a := call(context.Background(), h, event("acme", tc.path, tc.key, `{"amount":1}`))
			switch tc.want {
			case 400:
				refused++
				if a.Status != 400 || a.Problem != "key-expired" || b.count(sc) != 0 {
					t.Fatalf("%v, runs %d; want 400 key-expired and no run", a, b.count(sc))
				}
				if _, err := getLive(context.Background(), store, sc.ID(false), clk.Now()); !errors.Is(err, idemkit.ErrNotFound) {
					t.Fatalf("a refused late arrival left a record: %v", err)
				}
			case 201:
				if a.Status != 201 || a.Replay || b.count(sc) != 1 {
					t.Fatalf("%v, runs %d; want one run", a, b.count(sc))
				}
			}
		})
	}
	summary(t, "requests=%d refused_key_expired=%d executed=%d handler_runs_for_refused=0", len(cases), refused, len(cases)-refused)
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
