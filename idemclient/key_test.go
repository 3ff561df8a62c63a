package idemclient_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/idemclient"
)

// TestKeyChoice: a guarded request is sent with the caller's key, from
// its header or its context, or else with a new UUIDv7 of the client's
// clock; two different keys for one request are refused unsent.
func TestKeyChoice(t *testing.T) {
	mintErr := errors.New("no entropy")
	for _, tc := range []struct {
		name          string
		header, inCtx string
		// spelling is the header's name as the caller set it in the
		// map: "" for req.Header.Set; another spelling, as code copying
		// headers from a proxy does, adds it beside a header set.
		spelling, raw string
		newKey        func() (string, error)
		want          string // "v7": a new UUIDv7 of the clock
		err           error
	}{
		{name: "none given", want: "v7"},
		{name: "header", header: "order-1", want: "order-1"},
		{name: "context", inCtx: "order-2", want: "order-2"},
		{name: "both, equal", header: "order-3", inCtx: "order-3", want: "order-3"},
		{name: "both, different", header: "order-4", inCtx: "order-5", err: idemclient.ErrKeyNotSendable},
		{name: "header, lower case", spelling: "idempotency-key", raw: "order-6", want: "order-6"},
		{name: "header, upper case", spelling: "IDEMPOTENCY-KEY", raw: "order-7", want: "order-7"},
		{name: "header under two spellings, equal", header: "order-8", spelling: "idempotency-key", raw: "order-8", want: "order-8"},
		{name: "header under two spellings, different", header: "order-8", spelling: "idempotency-key", raw: "order-9", err: idemclient.ErrKeyNotSendable},
		{name: "lower-case header and context, different", spelling: "idempotency-key", raw: "order-10", inCtx: "order-11", err: idemclient.ErrKeyNotSendable},
		{name: "NewKey", newKey: func() (string, error) { return "mine-1", nil }, want: "mine-1"},
		{name: "NewKey fails", newKey: func() (string, error) { return "", mintErr }, err: mintErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &api{}
			srv := a.start(t)
			c, _ := newClient(t, a.clock, idemclient.Config{NewKey: tc.newKey})
			ctx := context.Background()
			if tc.inCtx != "" {
				ctx = idemclient.WithKey(ctx, tc.inCtx)
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/orders", strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			if tc.header != "" {
				req.Header.Set("Idempotency-Key", tc.header)
			}
			if tc.spelling != "" {
				req.Header[tc.spelling] = []string{tc.raw}
			}
			callers := req.Header.Clone()
			resp, err := c.Do(req)
			keys, _ := a.seen()
			if tc.err != nil {
				if !errors.Is(err, tc.err) || len(keys) != 0 {
					t.Fatalf("err = %v and %d requests sent, want %v and none", err, len(keys), tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if len(keys) != 1 {
				t.Fatalf("%d requests sent", len(keys))
			}
			if got := resp.Request.Header.Get("Idempotency-Key"); got != keys[0] {
				t.Errorf("resp.Request carries key %q, the server got %q", got, keys[0])
			}
			if !reflect.DeepEqual(req.Header, callers) {
				t.Errorf("the caller's request was changed: %v, was %v", req.Header, callers)
			}
			if n := len(resp.Request.Header.Values("Idempotency-Key")); n != 1 {
				t.Errorf("the attempt carries %d keys: %v", n, resp.Request.Header)
			}
			if tc.want != "v7" {
				if keys[0] != tc.want {
					t.Errorf("sent key %q, want %q", keys[0], tc.want)
				}
				return
			}
			u, err := uuid.Parse(keys[0])
			if err != nil || u.Version() != 7 || u.String() != keys[0] {
				t.Fatalf("sent key %q, want a UUIDv7", keys[0])
			}
			sec, nsec := u.Time().UnixTime()
			if at := time.Unix(sec, nsec); !at.Equal(a.clock.Now()) {
				t.Errorf("key time %s, want the client's clock %s", at, a.clock.Now())
			}
		})
	}
}

// TestNewKeyIsV7: NewKey mints distinct UUIDv7 keys of the current time,
// which the server reads as the client does.
func TestNewKeyIsV7(t *testing.T) {
	before := time.Now().Truncate(time.Millisecond)
	k1, k2 := idemclient.NewKey(), idemclient.NewKey()
	after := time.Now()
	for _, k := range []string{k1, k2} {
		u, err := uuid.Parse(k)
		if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 {
			t.Fatalf("NewKey() = %q, want a UUIDv7", k)
		}
		sec, nsec := u.Time().UnixTime()
		if at := time.Unix(sec, nsec); at.Before(before) || at.After(after) {
			t.Errorf("key time %s, want between %s and %s", at, before, after)
		}
	}
	if k1 == k2 {
		t.Errorf("NewKey twice gave %s", k1)
	}
}

// TestMethods: only the configured methods get a key and retries; any
// other request is sent once, unchanged, its answer returned as it came.
// The key's header is configurable to the server's.
func TestMethods(t *testing.T) {
	a := &api{mw: httpmw.Config{Settings: httpconfig.Settings{Header: "X-Idempotency-Key", Methods: []string{"PUT"}}}}
	var got []string
	a.handler = func(w http.ResponseWriter, r *http.Request) {
		a.runs.Add(1)
		got = append(got, r.Method+" "+r.Header.Get("X-Idempotency-Key"))
		w.WriteHeader(http.StatusServiceUnavailable) // never stored: retried where guarded
	}
	srv := a.start(t)
	c, _ := newClient(t, a.clock, idemclient.Config{Header: "X-Idempotency-Key", Methods: []string{"put"}, MaxAttempts: 2})
	for _, m := range []string{"GET", "POST", "DELETE", "PUT"} {
		req, _ := http.NewRequest(m, srv.URL+"/orders", nil)
		resp, err := c.Do(req)
		var ge *idemclient.GiveUpError
		switch {
		case m == "PUT" && (!errors.As(err, &ge) || ge.Attempts != 2):
			t.Errorf("PUT: %v, want a GiveUpError after 2 attempts", err)
		case m != "PUT" && (err != nil || resp.StatusCode != 503):
			t.Errorf("%s: %v %v, want the 503 returned", m, resp, err)
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
	if len(got) != 5 || got[0] != "GET " || got[1] != "POST " || got[2] != "DELETE " ||
		!strings.HasPrefix(got[3], "PUT ") || got[3] == "PUT " || got[4] != got[3] {
		t.Errorf("server got %q, want GET, POST and DELETE once without a key, PUT twice under one", got)
	}
}
