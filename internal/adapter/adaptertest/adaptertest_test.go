package adaptertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit/fingerprint"
	"github.com/idemkit/idemkit/internal/adapter"
)

// recorder keeps the errors Parity reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

type route struct {
	KeyOptional bool
	Fingerprint *fingerprint.Options
}

// full has every option.
type full struct {
	Tenant          string
	Methods         []string
	Header          string
	MaxKeyLen       int
	KeyOptional     bool
	Routes          map[string]route
	RouteTemplate   bool
	Fingerprint     fingerprint.Options
	ReplayHeaders   []string
	StoreRetryAfter time.Duration
}

func convert(c full) adapter.Options {
	return adapter.Options{Methods: c.Methods, Header: c.Header, MaxKeyLen: c.MaxKeyLen, KeyOptional: c.KeyOptional,
		Routes: adapter.Routes(c.Routes), RouteTemplate: c.RouteTemplate, Fingerprint: c.Fingerprint,
		ReplayHeaders: c.ReplayHeaders, StoreRetryAfter: c.StoreRetryAfter}
}

// lacking has no StoreRetryAfter and an extra field.
type lacking struct {
	Tenant        string
	Methods       []string
	Header        string
	MaxKeyLen     int
	KeyOptional   bool
	Routes        map[string]route
	RouteTemplate bool
	Fingerprint   fingerprint.Options
	ReplayHeaders []string
	Extra         int
}

func TestParity(t *testing.T) {
	Parity(t, convert, nil, []string{"Tenant"})

	run := func(f func(tb testing.TB)) []string {
		r := &recorder{TB: t}
		f(r)
		return r.errs
	}
	for _, tc := range []struct {
		name string
		run  func(tb testing.TB)
		want []string // substrings, one per expected error
	}{
		{"a field left out of the conversion", func(tb testing.TB) {
			Parity(tb, func(c full) adapter.Options { o := convert(c); o.Header = ""; return o }, nil, []string{"Tenant"})
		}, []string{"passes Header"}},
		{"a missing option and an unshared field", func(tb testing.TB) {
			Parity(tb, func(c lacking) adapter.Options {
				return adapter.Options{Methods: c.Methods, Header: c.Header, MaxKeyLen: c.MaxKeyLen, KeyOptional: c.KeyOptional,
					Routes: adapter.Routes(c.Routes), RouteTemplate: c.RouteTemplate, Fingerprint: c.Fingerprint, ReplayHeaders: c.ReplayHeaders}
			}, nil, []string{"Tenant"})
		}, []string{"lacks StoreRetryAfter", "Extra is not in adapter.Options"}},
		{"a field listed as missing that exists", func(tb testing.TB) {
			Parity(tb, convert, []string{"RouteTemplate"}, []string{"Tenant"})
		}, []string{"has RouteTemplate, listed as missing"}},
	} {
		errs := run(tc.run)
		if len(errs) != len(tc.want) {
			t.Errorf("%s: errors %q, want %d", tc.name, errs, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(errs[i], w) {
				t.Errorf("%s: error %q, want it to say %q", tc.name, errs[i], w)
			}
		}
	}
}
