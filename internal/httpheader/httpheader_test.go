package httpheader

import "testing"

func TestNeverReplayed(t *testing.T) {
	for name, want := range map[string]bool{
		"Set-Cookie": true, "SET-COOKIE": true, "\u017fet-cookie": true, "Date": true, "Retry-After": true,
		"Proxy-Authenticate": true, "Proxy-Connection": true, "Via": true, "Server-Timing": true, "Cf-Ray": true,
		"X-B3-TraceId": true, "b3": true, "X-Amz-Cf-Id": true, "x-amzn-requestid": true, "RateLimit-Policy": true,
		"X-RateLimit-Remaining": true, "Idempotent-Replayed": true, "Content-Length": true, "": true, "Set Cookie": true,
		"Content-Type": false, "Location": false, "ETag": false, "X-Order-Id": false, "Link": false, "Vary": false,
	} {
		if got := NeverReplayed(name); got != want {
			t.Errorf("NeverReplayed(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"Content-Type": true, "x-order_id.v2": true, "!#$%&'*+-.^_`|~": true,
		"": false, "Set Cookie": false, "\u017fet-cookie": false, "X-Ordé": false, "a:b": false, "a\x7f": false, "(x)": false,
	} {
		if got := ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestValidValue(t *testing.T) {
	for v, want := range map[string]bool{
		"": true, "application/json": true, "a b\tc": true, "caf\xc3\xa9": true,
		" a": false, "a ": false, "a\r\nb": false, "a\x00": false, "/a\x1b[2J": false, "a\x7f": false, "\tb": false,
	} {
		if got := ValidValue(v); got != want {
			t.Errorf("ValidValue(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestEqualFold(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"Set-Cookie", "set-cookie", true}, {"ETAG", "etag", true},
		{"\u017fet-cookie", "set-cookie", false}, {"K", "\u212a", false}, {"a", "ab", false},
	} {
		if got := EqualFold(c.a, c.b); got != c.want {
			t.Errorf("EqualFold(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
