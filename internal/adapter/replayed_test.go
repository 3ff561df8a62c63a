package adapter_test

import (
	"slices"
	"testing"
)

// TestFreshResponseNeverMarkedReplayed: Idempotent-Replayed belongs to the
// guard: a handler that sets it (any spelling, any value) does not mark its
// fresh response, which goes out without it, and a replay carries it once,
// "true", through every front.
func TestFreshResponseNeverMarkedReplayed(t *testing.T) {
	for _, hdr := range [][][2]string{
		{{"Idempotent-Replayed", "true"}},
		{{"idempotent-replayed", "false"}},
		{{"IDEMPOTENT-REPLAYED", "true"}, {"Idempotent-Replayed", "true"}},
	} {
		runs := 0
		for name, send := range headerFronts(t, append(hdr, [2]string{"Content-Type", "application/json"}), &runs) {
			t.Run(hdr[0][0]+"/"+name, func(t *testing.T) {
				first := send(t)
				if vs := values(first, "Idempotent-Replayed"); len(vs) > 0 {
					t.Errorf("fresh response carries Idempotent-Replayed %q", vs)
				}
				if vs := values(first, "Content-Type"); !slices.Equal(vs, []string{"application/json"}) {
					t.Errorf("fresh response Content-Type %q, want the handler's", vs)
				}
				replay := send(t)
				if vs := values(replay, "Idempotent-Replayed"); !slices.Equal(vs, []string{"true"}) {
					t.Errorf("replay carries Idempotent-Replayed %q, want [true]", vs)
				}
			})
		}
		if want := 7; runs != want {
			t.Errorf("%v: handlers ran %d times, want %d (one per front)", hdr, runs, want)
		}
	}
}
