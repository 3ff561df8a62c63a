package main

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// TestHeaderFlagRefusesNeverReplayed: an operator's answer can carry no
// header that the adapters refuse to replay (retry hints, cache dates,
// request and trace ids, X-RateLimit-*, hop-by-hop fields), in any case:
// a replay of it would repeat one exchange's details to every retry.
func TestHeaderFlagRefusesNeverReplayed(t *testing.T) {
	for _, name := range []string{
		"Set-Cookie", "Set-Cookie2", "Date", "Retry-After", "Age", "Expires",
		"X-Request-Id", "X-Correlation-Id", "Request-Id", "Traceparent", "Tracestate", "Baggage",
		"X-Amzn-Trace-Id", "X-Amz-Cf-Id", "X-Amzn-Remapped-Content-Length",
		"RateLimit-Policy", "X-RateLimit-Remaining", "X-Rate-Limit-Limit",
		"Connection", "Keep-Alive", "Transfer-Encoding", "Upgrade", "Trailer", "TE", "Content-Length",
		"Idempotent-Replayed",
		"Proxy-Authenticate", "Proxy-Authorization", "Proxy-Connection", "X-B3-TraceId", "B3", "Via", "Server-Timing", "Cf-Ray",
	} {
		for _, spelled := range []string{name, strings.ToLower(name), strings.ToUpper(name)} {
			var f headerFlags
			if err := f.Set(spelled + ": 1"); err == nil || !strings.Contains(err.Error(), "never replayed") {
				t.Errorf("--header %q: %v, want it refused as never replayed", spelled+": 1", err)
			}
			if f.h != nil {
				t.Errorf("--header %q kept %v", spelled, f.h)
			}
		}
	}
	var f headerFlags
	for _, v := range []string{"content-type: application/json", "Location: /orders/1", "x-order-id:  ord_1 ", "Link: </a>", "Link: </b>"} {
		if err := f.Set(v); err != nil {
			t.Errorf("--header %q: %v", v, err)
		}
	}
	want := http.Header{"Content-Type": {"application/json"}, "Location": {"/orders/1"}, "X-Order-Id": {"ord_1"}, "Link": {"</a>", "</b>"}}
	if !reflect.DeepEqual(f.h, want) {
		t.Errorf("headers %v, want %v", f.h, want)
	}
}

// TestHeaderFlagRefusesMalformed: a --header that could not be sent as one
// header line is refused: no colon, a name that is not an HTTP token
// (empty, a space, DEL, a separator, a non-ASCII letter), a value holding
// a control character (CR, LF or NUL would split the replayed response's
// header; an escape sequence would reach a terminal).
func TestHeaderFlagRefusesMalformed(t *testing.T) {
	for _, v := range []string{
		"no colon", ": value", "X Order: 1", "X-Order\x7f: 1", "X(Order): 1", "X-Ordé: 1",
		"X-Order: a\r\nSet-Cookie: b=1", "X-Order: a\nb", "X-Order: a\rb", "X-Order: a\x00b",
		"Location: /a\x1b[2J", "X-Order: a\x7fb", "X-Order: a\x01", "\u017fet-cookie: a=1",
	} {
		var f headerFlags
		if err := f.Set(v); err == nil || f.h != nil {
			t.Errorf("--header %q accepted: %v", v, f.h)
		}
	}
}
