package observe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/idemkit/idemkit/observe"
)

// lines returns what each observer writes for e, one JSON object per
// observer: a Logger and an EMF with the given redactions.
func lines(t *testing.T, e observe.Event, tenant, key observe.Redaction) (logged, emf map[string]any, size [2]int) {
	t.Helper()
	var lb, eb bytes.Buffer
	observe.Logger{Logger: slog.New(slog.NewJSONHandler(&lb, nil)), Tenant: tenant, Key: key}.Observe(context.Background(), e)
	(&observe.EMF{Writer: &eb, Tenant: tenant, Key: key}).Observe(context.Background(), e)
	for i, b := range []*bytes.Buffer{&lb, &eb} {
		size[i] = b.Len()
		if strings.Count(b.String(), "\n") != 1 {
			t.Fatalf("not one line: %.200q", b.String())
		}
	}
	if err := json.Unmarshal(lb.Bytes(), &logged); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(eb.Bytes(), &emf); err != nil {
		t.Fatal(err)
	}
	return logged, emf, size
}

// TestRedaction: a Logger writes the tenant in clear and the key hashed
// unless told otherwise; an EMF line carries neither unless told; both
// hash or leave out either field on request. The hash is the one
// sha256sum gives, so an operator can search the lines of a key.
func TestRedaction(t *testing.T) {
	const tenant, key = "tenant-a", "0190a4b2-7c3d-7e4f-8a1b-2c3d4e5f6a7b"
	hashedKey := observe.Hash(key)
	if got := observe.Hash("k-1"); got != "sha256:7c35c5a1785d20704e44d5de4beb81c1" {
		t.Errorf(`Hash("k-1") = %q, want the first 32 hex digits of its SHA-256`, got)
	}
	e := sample
	e.Tenant, e.Operation, e.Key = tenant, "POST /orders", key
	absent := "absent"
	for _, tc := range []struct {
		name              string
		tenant, key       observe.Redaction
		logTenant, logKey string
		emfTenant, emfKey string
	}{
		{"defaults", 0, 0, tenant, hashedKey, absent, absent},
		{"in clear", observe.InClear, observe.InClear, tenant, key, tenant, key},
		{"hashed", observe.Hashed, observe.Hashed, observe.Hash(tenant), hashedKey, observe.Hash(tenant), hashedKey},
		{"omitted", observe.Omitted, observe.Omitted, absent, absent, absent, absent},
		{"tenant hashed, key default", observe.Hashed, 0, observe.Hash(tenant), hashedKey, observe.Hash(tenant), absent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logged, emf, _ := lines(t, e, tc.tenant, tc.key)
			for _, f := range []struct {
				what, name, want string
				line             map[string]any
			}{
				{"log", "tenant", tc.logTenant, logged},
				{"log", "key", tc.logKey, logged},
				{"EMF", "tenant", tc.emfTenant, emf},
				{"EMF", "key", tc.emfKey, emf},
			} {
				got, ok := f.line[f.name]
				if f.want == absent && ok || f.want != absent && got != f.want {
					t.Errorf("%s %s = %v (present %v), want %s", f.what, f.name, got, ok, f.want)
				}
			}
			for _, line := range []map[string]any{logged, emf} {
				for k, v := range line {
					if s, ok := v.(string); ok && tc.key != observe.InClear && strings.Contains(s, key) {
						t.Errorf("%s carries the key in clear: %q", k, s)
					}
				}
			}
		})
	}
}

// TestObserversBounded: whatever the scope and the error, every text
// field of a log or EMF line is at most MaxFieldBytes, so a line stays
// small. A 900 KB path and key made lines of megabytes, over the 256 KB
// CloudWatch Logs keeps of an event.
func TestObserversBounded(t *testing.T) {
	big := strings.Repeat("x", 900<<10)
	e := sample
	e.Kind = observe.EventRefused
	e.Tenant, e.Operation, e.Key = "t"+big, "POST /"+big, "k"+big
	e.Err = errors.New("refused: " + big)
	for _, r := range []observe.Redaction{observe.InClear, observe.Hashed} {
		logged, emf, size := lines(t, e, r, r)
		for i, line := range []map[string]any{logged, emf} {
			if size[i] > 5*observe.MaxFieldBytes {
				t.Errorf("line %d: %d bytes", i, size[i])
			}
			for k, v := range line {
				if s, ok := v.(string); ok && len(s) > observe.MaxFieldBytes {
					t.Errorf("line %d: %s of %d bytes", i, k, len(s))
				}
			}
		}
		if s, _ := logged["operation"].(string); !strings.HasSuffix(s, "...") || !strings.HasPrefix(s, "POST /xxx") {
			t.Errorf("operation %.40q...: want it cut, marked with ...", s)
		}
	}
}
