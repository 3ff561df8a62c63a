package eventlog

import (
	"context"
	"reflect"
	"testing"

	"github.com/idemkit/idemkit/observe"
)

func TestLog(t *testing.T) {
	for _, tc := range []struct {
		name      string
		keepLast  bool
		wantKinds []observe.EventKind
	}{
		{name: "every event", wantKinds: []observe.EventKind{observe.EventExecuted, observe.EventReplayed}},
		{name: "keep last", keepLast: true, wantKinds: []observe.EventKind{observe.EventReplayed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &Log{KeepLast: tc.keepLast}
			if got := l.Last(); got.Kind != "" {
				t.Fatalf("empty log: Last() = %v, want the zero Event", got)
			}
			l.Observe(context.Background(), observe.Event{Kind: observe.EventExecuted})
			l.Observe(context.Background(), observe.Event{Kind: observe.EventReplayed})
			if got := l.Kinds(); !reflect.DeepEqual(got, tc.wantKinds) {
				t.Errorf("Kinds() = %v, want %v", got, tc.wantKinds)
			}
			if got := len(l.Events()); got != len(tc.wantKinds) {
				t.Errorf("len(Events()) = %d, want %d", got, len(tc.wantKinds))
			}
			if got := l.Last().Kind; got != observe.EventReplayed {
				t.Errorf("Last().Kind = %v, want %v", got, observe.EventReplayed)
			}
		})
	}
}
