package fingerprint

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func mustCompute(t testing.TB, in Input, opts Options) string {
	t.Helper()
	fp, err := Compute(in, opts)
	if err != nil {
		t.Fatalf("Compute(%q): %v", in.Body, err)
	}
	return fp
}

func jsonIn(body string) Input {
	return Input{ContentType: "application/json", Body: []byte(body)}
}

func formIn(body string) Input {
	return Input{ContentType: "application/x-www-form-urlencoded", Body: []byte(body)}
}

var fpPattern = regexp.MustCompile(`^v2:sha256:[0-9a-f]{64}$`)

// TestSameOrDifferent is the main table: each case says whether two
// requests must share a fingerprint under the given options.
func TestSameOrDifferent(t *testing.T) {
	const order = `{"customer":"c_42","amount":1000,"currency":"EUR","items":[{"sku":"A","qty":1},{"sku":"B","qty":2}],"meta":{"client_ts":"2026-01-01T10:00:00Z","trace":"abc"}}`
	tests := []struct {
		name string
		a, b Input
		opts Options
		same bool
	}{
		// Canonical JSON.
		{"key order and whitespace", jsonIn(`{"a":1,"b":[1,2],"c":{"y":null,"x":true}}`),
			jsonIn("{ \"c\" : {\"x\":true,\n\"y\":null} ,\t\"b\":[ 1,2 ], \"a\" : 1 }\r\n"), Options{}, true},
		{"string escapes", jsonIn(`{"s":"A/é😀"}`), jsonIn(`{"\u0073":"\u0041\/\u00e9\ud83d\ude00"}`), Options{}, true},
		{"escaped control characters", jsonIn(`["\u0000\u001F\b\f\n\r\t\u007f"]`), jsonIn("[\"\\u0000\\u001f\\u0008\\u000C\\u000a\\u000D\\u0009\x7f\"]"), Options{}, true},
		{"NUL vs empty string", jsonIn(`["\u0000"]`), jsonIn(`[""]`), Options{}, false},
		{"surrogate pair vs raw", jsonIn(`["\ud800\udc00"]`), jsonIn(`["𐀀"]`), Options{}, true},
		{"top-level scalars", jsonIn(`1`), jsonIn(`"1"`), Options{}, false},
		{"null body vs empty object", jsonIn(`null`), jsonIn(`{}`), Options{}, false},
		{"empty body vs empty object", Input{ContentType: "application/json"}, jsonIn(`{}`), Options{}, false},
		{"key that differs after unescaping", jsonIn(`{"a\"b":1}`), jsonIn(`{"a\\b":1}`), Options{}, false},
		{"amount changed", jsonIn(order), jsonIn(replace(order, `1000`, `1001`)), Options{}, false},
		{"currency changed", jsonIn(order), jsonIn(replace(order, `"EUR"`, `"USD"`)), Options{}, false},
		{"nested quantity changed", jsonIn(order), jsonIn(replace(order, `"qty":2`, `"qty":3`)), Options{}, false},
		{"array order changed", jsonIn(`{"items":["A","B"]}`), jsonIn(`{"items":["B","A"]}`), Options{}, false},
		{"number vs string", jsonIn(`{"amount":1000}`), jsonIn(`{"amount":"1000"}`), Options{}, false},
		{"bool vs string", jsonIn(`{"ok":true}`), jsonIn(`{"ok":"true"}`), Options{}, false},
		{"null vs missing member", jsonIn(`{"a":1,"b":null}`), jsonIn(`{"a":1}`), Options{}, false},
		{"empty object vs empty array", jsonIn(`{"a":{}}`), jsonIn(`{"a":[]}`), Options{}, false},
		{"member added", jsonIn(`{"a":1}`), jsonIn(`{"a":1,"b":2}`), Options{}, false},
		{"nesting moved", jsonIn(`[[1],2]`), jsonIn(`[[1,2]]`), Options{}, false},

		// Numbers.
		{"1 vs 1.0", jsonIn(`{"n":1}`), jsonIn(`{"n":1.0}`), Options{}, true},
		{"1 vs 1e0", jsonIn(`{"n":1}`), jsonIn(`{"n":1e0}`), Options{}, true},
		{"1.0 vs 10E-1", jsonIn(`{"n":1.0}`), jsonIn(`{"n":10E-1}`), Options{}, true},
		{"0 vs -0 vs -0.0", jsonIn(`[0,0]`), jsonIn(`[-0,-0.0]`), Options{}, true},
		{"0.1 vs 0.10", jsonIn(`[0.1]`), jsonIn(`[0.10]`), Options{}, true},
		{"1 vs 1.5", jsonIn(`{"n":1}`), jsonIn(`{"n":1.5}`), Options{}, false},
		{"big integers one apart", jsonIn(`{"amount":9007199254740993}`), jsonIn(`{"amount":9007199254740992}`), Options{}, false},
		{"big negative integers one apart", jsonIn(`{"amount":-9007199254740993}`), jsonIn(`{"amount":-9007199254740992}`), Options{}, false},
		{"huge integers one apart", jsonIn(`[123456789012345678901234567890]`), jsonIn(`[123456789012345678901234567891]`), Options{}, false},
		{"big integer reformatted", jsonIn(`{"amount": 9007199254740993 }`), jsonIn(`{"amount":9007199254740993}`), Options{}, true},
		{"above 2^53, float prints the same digits", jsonIn(`[9007199254740994]`), jsonIn(`[9007199254740994.0]`), Options{}, true},
		{"integer 10^21 vs 1e21", jsonIn(`[1000000000000000000000]`), jsonIn(`[1e21]`), Options{}, false},
		{"2^53 as integer and float", jsonIn(`[9007199254740992]`), jsonIn(`[9007199254740992.0]`), Options{}, true},
		// Known limits of float64 numbers (RFC 8785), documented: literals
		// with a fraction or exponent that round to one float64 are one value.
		{"decimals beyond float64 precision round together", jsonIn(`[0.123456789012345678]`), jsonIn(`[0.123456789012345679]`), Options{}, true},
		{"non-integer literal above 2^53 rounds", jsonIn(`[9007199254740993.0]`), jsonIn(`[9007199254740992]`), Options{}, true},
		{"integer literal vs the same value as a float above 2^53", jsonIn(`[9007199254740993]`), jsonIn(`[9007199254740993.0]`), Options{}, false},
		{"2^60 as integer and float", jsonIn(`[1152921504606846976]`), jsonIn(`[1152921504606846976.0]`), Options{}, false},
		{"underflow is zero", jsonIn(`[1e-400]`), jsonIn(`[0]`), Options{}, true},
		{"decimals within float64 precision", jsonIn(`[0.12345678901234567]`), jsonIn(`[0.12345678901234568]`), Options{}, false},
		{"small amounts", jsonIn(`{"amount":0.1}`), jsonIn(`{"amount":0.2}`), Options{}, false},

		// Exclude.
		{"excluded field changed", jsonIn(order), jsonIn(replace(order, `10:00:00Z`, `10:00:05Z`)),
			Options{Exclude: []string{"/meta/client_ts", "/meta/trace"}}, true},
		{"excluded field removed", jsonIn(`{"a":1,"ts":5}`), jsonIn(`{"a":1}`), Options{Exclude: []string{"/ts"}}, true},
		{"excluded subtree", jsonIn(order), jsonIn(replace(order, `"trace":"abc"`, `"trace":"xyz","more":[1]`)),
			Options{Exclude: []string{"/meta"}}, true},
		{"excluded array element", jsonIn(`{"l":[1,2,3]}`), jsonIn(`{"l":[1,9,3]}`), Options{Exclude: []string{"/l/1"}}, true},
		{"business field changed despite exclude", jsonIn(order), jsonIn(replace(order, `1000`, `999`)),
			Options{Exclude: []string{"/meta"}}, false},
		{"exclude escapes ~0 ~1", jsonIn(`{"a/b":1,"c~d":2,"e":3}`), jsonIn(`{"a/b":7,"c~d":8,"e":3}`),
			Options{Exclude: []string{"/a~1b", "/c~0d"}}, true},

		// Include.
		{"included field missing vs null", jsonIn(`{"a":1}`), jsonIn(`{"a":1,"b":null}`), Options{Include: []string{"/a", "/b"}}, false},
		{"included field missing vs null at top", jsonIn(`{}`), jsonIn(`{"b":null}`), Options{Include: []string{"/b"}}, false},
		{"only included fields count", jsonIn(order), jsonIn(replace(replace(order, `"abc"`, `"x"`), `"c_42"`, `"c_43"`)),
			Options{Include: []string{"/amount", "/currency", "/items"}}, true},
		{"included field changed", jsonIn(order), jsonIn(replace(order, `"EUR"`, `"USD"`)),
			Options{Include: []string{"/amount", "/currency"}}, false},
		{"include order irrelevant", jsonIn(order), jsonIn(order),
			Options{Include: []string{"/currency", "/amount", "/amount"}}, true},
		{"include array element", jsonIn(`{"l":[{"id":1},{"id":2}]}`), jsonIn(`{"l":[{"id":1},{"id":3}]}`),
			Options{Include: []string{"/l/0"}}, true},
		{"include index out of range vs null", jsonIn(`{"l":[]}`), jsonIn(`{"l":[null]}`), Options{Include: []string{"/l/0"}}, false},
		{"include through scalar is absent", jsonIn(`{"a":1}`), jsonIn(`{"a":2}`), Options{Include: []string{"/a/b"}}, true},
		{"include index out of range is absent", jsonIn(`{"l":[1]}`), jsonIn(`{}`), Options{Include: []string{"/l/1"}}, true},
		{"include index with a leading zero selects nothing", jsonIn(`{"l":[1,2]}`), jsonIn(`{"l":[1,3]}`), Options{Include: []string{"/l/01"}}, true},
		{"pointers refer to the body as sent", jsonIn(`{"l":[0,1,2]}`), jsonIn(`{"l":[9,1,7]}`),
			Options{Include: []string{"/l/1"}, Exclude: []string{"/l/0"}}, true},
		{"include with exclude inside", jsonIn(order), jsonIn(replace(order, `"abc"`, `"zzz"`)),
			Options{Include: []string{"/meta"}, Exclude: []string{"/meta/trace"}}, true},
		{"include of excluded pointer is absent", jsonIn(`{"a":1}`), jsonIn(`{"a":2}`),
			Options{Include: []string{"/a"}, Exclude: []string{"/a"}}, true},
		{"whole body included", jsonIn(`{"a":1}`), jsonIn(`{"a":2}`), Options{Include: []string{""}}, false},

		// Forms.
		{"form reordered", formIn(`b=2&a=1&c=3`), formIn(`c=3&a=1&b=2`), Options{}, true},
		{"form escapes", formIn(`name=J%C3%BCrgen+M&x=%41`), formIn(`x=A&name=J%c3%bcrgen%20M`), Options{}, true},
		{"form escapes with hex letters in either case", formIn(`x=%6a%6A%4a%4f%4F&y=%aa%AF`), formIn(`y=%AA%af&x=jjJOO`), Options{}, true},
		{"form repeated values keep order", formIn(`a=1&a=2`), formIn(`a=2&a=1`), Options{}, false},
		{"form value changed", formIn(`a=1&b=2`), formIn(`a=1&b=3`), Options{}, false},
		{"form empty value vs missing", formIn(`a=1&b=`), formIn(`a=1`), Options{}, false},
		{"form exclude", formIn(`a=1&ts=5`), formIn(`ts=9&a=1`), Options{Exclude: []string{"/ts"}}, true},
		{"form include missing vs empty", formIn(`a=1`), formIn(`a=1&b=`), Options{Include: []string{"/a", "/b"}}, false},
		{"form include", formIn(`a=1&b=2`), formIn(`a=1&b=3`), Options{Include: []string{"/a"}}, true},
		{"form vs JSON", formIn(`a=1`), jsonIn(`{"a":["1"]}`), Options{}, false},

		// Raw bodies and mode choice.
		{"raw whitespace matters", Input{ContentType: "text/plain", Body: []byte("a b")}, Input{ContentType: "text/plain", Body: []byte("a  b")}, Options{}, false},
		{"raw same bytes", Input{ContentType: "application/octet-stream", Body: []byte{0, 1, 2}}, Input{ContentType: "application/octet-stream", Body: []byte{0, 1, 2}}, Options{}, true},
		{"raw ignores include", Input{ContentType: "text/plain", Body: []byte(`{"a":1,"b":1}`)}, Input{ContentType: "text/plain", Body: []byte(`{"a":1,"b":2}`)}, Options{Include: []string{"/a"}}, false},
		{"json content type with parameters", jsonIn(`{"a":1}`), Input{ContentType: "Application/JSON; charset=utf-8", Body: []byte(`{ "a": 1 }`)}, Options{}, true},
		{"json content type padded before its parameters", jsonIn(`{"a":1}`), Input{ContentType: " application/json\t; charset=utf-8", Body: []byte(`{ "a": 1 }`)}, Options{}, true},
		{"form content type padded", formIn(`a=1&b=2`), Input{ContentType: "application/x-www-form-urlencoded ", Body: []byte(`b=2&a=1`)}, Options{}, true},
		{"+json suffix", jsonIn(`{"a":1}`), Input{ContentType: "application/merge-patch+json", Body: []byte(`{ "a": 1 }`)}, Options{}, true},
		{"no content type sniffed as JSON", jsonIn(`{"a":1}`), Input{Body: []byte(` {"a":1}`)}, Options{}, true},
		{"no content type, BOM before JSON is raw", Input{Body: []byte("\ufeff{\"a\":1}")}, Input{ContentType: "text/plain", Body: []byte("\ufeff{\"a\":1}")}, Options{}, true},
		{"no content type, not JSON-looking", Input{Body: []byte(`a=1`)}, Input{ContentType: "text/plain", Body: []byte(`a=1`)}, Options{}, true},
		{"content type from Header", jsonIn(`{"a":1}`), Input{Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{ "a":1}`)}, Options{}, true},
		{"content type from lower-case Header", formIn(`a=1&b=2`), Input{Header: map[string][]string{"content-type": {"application/x-www-form-urlencoded"}}, Body: []byte(`b=2&a=1`)}, Options{}, true},
		{"ContentType wins over Header", Input{ContentType: "text/plain", Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"a":1}`)},
			Input{ContentType: "text/plain", Body: []byte(`{"a":1}`)}, Options{}, true},
		{"json vs raw of same bytes", jsonIn(`{"a":1}`), Input{ContentType: "text/plain", Body: []byte(`{"a":1}`)}, Options{}, false},
		{"empty body", jsonIn(``), Input{}, Options{}, true},
		{"ModeRaw forces bytes", jsonIn(`{"a":1}`), jsonIn(`{ "a":1}`), Options{Mode: ModeRaw}, false},

		// Base64.
		{"base64 equals decoded", jsonIn(`{"a":1}`),
			Input{ContentType: "application/json", Body: b64(`{ "a" : 1 }`), IsBase64Encoded: true}, Options{}, true},
		{"base64 binary equals decoded", Input{ContentType: "image/png", Body: []byte{0x89, 'P', 'N', 'G', 0}},
			Input{ContentType: "image/png", Body: b64("\x89PNG\x00"), IsBase64Encoded: true}, Options{}, true},
		{"base64 form", formIn(`b=2&a=1`), Input{ContentType: "application/x-www-form-urlencoded", Body: b64("a=1&b=2"), IsBase64Encoded: true}, Options{}, true},

		// Method and path.
		{"method ignored by default", Input{Method: "POST", Body: []byte(`{}`)}, Input{Method: "PUT", Body: []byte(`{}`)}, Options{}, true},
		{"method opted in", Input{Method: "POST", Body: []byte(`{}`)}, Input{Method: "PUT", Body: []byte(`{}`)}, Options{Method: true}, false},
		{"path opted in", Input{Path: "/orders/1", Body: []byte(`{}`)}, Input{Path: "/orders/2", Body: []byte(`{}`)}, Options{Path: true}, false},
		{"method/path boundary", Input{Method: "AB", Path: "C"}, Input{Method: "A", Path: "BC"}, Options{Method: true, Path: true}, false},
		{"path/query boundary", Input{Path: "/a", Query: url.Values{"b": {""}}}, Input{Path: "/ab"}, Options{Path: true}, false},
		{"path with '?' vs query", Input{Path: "/a?b=1"}, Input{Path: "/a", Query: url.Values{"b": {"1"}}}, Options{Path: true}, false},
		{"multipart boundary counts", Input{ContentType: "multipart/form-data; boundary=x", Body: []byte("--x\r\n\r\n1\r\n--x--")},
			Input{ContentType: "multipart/form-data; boundary=y", Body: []byte("--y\r\n\r\n1\r\n--y--")}, Options{}, false},
		{"media type not hashed", Input{ContentType: "text/plain", Body: []byte("# x")}, Input{ContentType: "text/markdown", Body: []byte("# x")}, Options{}, true},
		{"JSON media types not hashed", jsonIn(`{"a":null}`), Input{ContentType: "application/merge-patch+json", Body: []byte(`{"a":null}`)}, Options{}, true},
		{"media type hashed when listed", Input{Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"a":null}`)},
			Input{Header: http.Header{"Content-Type": {"application/merge-patch+json"}}, Body: []byte(`{"a":null}`)}, Options{Headers: []string{"Content-Type"}}, false},
		{"charset parameter ignored for raw bytes", Input{ContentType: "text/plain; charset=utf-8", Body: []byte("x")}, Input{ContentType: "text/plain", Body: []byte("x")}, Options{}, true},
		{"path vs body boundary", Input{Path: "/x", ContentType: "text/plain", Body: []byte("y")}, Input{Path: "/", ContentType: "text/plain", Body: []byte("xy")}, Options{Path: true}, false},

		// Query.
		{"query counts by default", Input{Query: url.Values{"v": {"1"}}}, Input{Query: url.Values{"v": {"2"}}}, Options{}, false},
		{"query absent vs empty by default", Input{}, Input{Query: url.Values{"v": {""}}}, Options{}, false},
		{"query nil vs empty map", Input{}, Input{Query: url.Values{}}, Options{}, true},
		{"query param order irrelevant by default", Input{Query: url.Values{"a": {"1"}, "b": {"2"}}}, Input{Query: url.Values{"b": {"2"}, "a": {"1"}}}, Options{}, true},
		{"query values order by default", Input{Query: url.Values{"v": {"1", "2"}}}, Input{Query: url.Values{"v": {"2", "1"}}}, Options{}, false},
		{"query name/value boundary by default", Input{Query: url.Values{"ab": {""}}}, Input{Query: url.Values{"a": {"b"}}}, Options{}, false},
		{"query ignored with IgnoreQuery", Input{Query: url.Values{"v": {"1"}}}, Input{Query: url.Values{"v": {"2"}}}, Options{IgnoreQuery: true}, true},
		{"query opted in", Input{Query: url.Values{"v": {"1"}}}, Input{Query: url.Values{"v": {"2"}}}, Options{Query: []string{"v"}}, false},
		{"query unselected param", Input{Query: url.Values{"v": {"1"}, "t": {"1"}}}, Input{Query: url.Values{"v": {"1"}, "t": {"2"}}}, Options{Query: []string{"v"}}, true},
		{"query repeated values order", Input{Query: url.Values{"v": {"1", "2"}}}, Input{Query: url.Values{"v": {"2", "1"}}}, Options{Query: []string{"v"}}, false},
		{"query absent vs empty", Input{Query: url.Values{}}, Input{Query: url.Values{"v": {""}}}, Options{Query: []string{"v"}}, false},
		{"query name order irrelevant", Input{Query: url.Values{"a": {"1"}, "b": {"2"}}}, Input{Query: url.Values{"b": {"2"}, "a": {"1"}}}, Options{Query: []string{"b", "a"}}, true},
		{"query value boundary", Input{Query: url.Values{"a": {"xy"}, "b": {""}}}, Input{Query: url.Values{"a": {"x"}, "b": {"y"}}}, Options{Query: []string{"a", "b"}}, false},
		{"query names are case-sensitive", Input{Query: url.Values{"v": {"1"}}}, Input{Query: url.Values{"V": {"1"}}}, Options{Query: []string{"v"}}, false},

		// Headers.
		{"headers ignored by default", Input{Header: http.Header{"User-Agent": {"a"}, "X-Trace-Id": {"1"}}}, Input{Header: http.Header{"User-Agent": {"b"}}}, Options{}, true},
		{"header opted in", Input{Header: http.Header{"X-Tenant-Region": {"eu"}}}, Input{Header: http.Header{"X-Tenant-Region": {"us"}}}, Options{Headers: []string{"x-tenant-region"}}, false},
		{"header name case", Input{Header: http.Header{"X-Region": {"eu"}}}, Input{Header: map[string][]string{"x-region": {"eu"}}}, Options{Headers: []string{"X-REGION"}}, true},
		{"header value whitespace", Input{Header: http.Header{"X-Region": {" eu\t"}}}, Input{Header: http.Header{"X-Region": {"eu"}}}, Options{Headers: []string{"x-region"}}, true},
		{"header absent vs empty", Input{Header: http.Header{}}, Input{Header: http.Header{"X-Region": {""}}}, Options{Headers: []string{"x-region"}}, false},
		{"header other names ignored", Input{Header: http.Header{"X-Region": {"eu"}, "Date": {"1"}}}, Input{Header: http.Header{"X-Region": {"eu"}, "Date": {"2"}}}, Options{Headers: []string{"x-region"}}, true},
		{"header keys differing in case merge", Input{Header: map[string][]string{"X-A": {"1"}, "x-a": {"2"}}}, Input{Header: map[string][]string{"X-A": {"1", "2"}}}, Options{Headers: []string{"x-a"}}, true},
		{"merged header keys' values trimmed", Input{Header: map[string][]string{"X-A": {" 1"}, "x-a": {"2\t"}}}, Input{Header: map[string][]string{"X-A": {"1", "2"}}}, Options{Headers: []string{"x-a"}}, true},
		{"header vs query", Input{Header: http.Header{"A": {"1"}}}, Input{Query: url.Values{"a": {"1"}}}, Options{Headers: []string{"a"}, Query: []string{"a"}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := mustCompute(t, tc.a, tc.opts)
			b := mustCompute(t, tc.b, tc.opts)
			if !fpPattern.MatchString(a) || !fpPattern.MatchString(b) {
				t.Fatalf("malformed fingerprints %q %q", a, b)
			}
			if (a == b) != tc.same {
				t.Errorf("same = %v, want %v\n a: %s\n b: %s", a == b, tc.same, a, b)
			}
		})
	}
}

func replace(s, old, new string) string {
	r := regexp.MustCompile(regexp.QuoteMeta(old))
	if !r.MatchString(s) {
		panic("replace: " + old + " not found")
	}
	return r.ReplaceAllLiteralString(s, new)
}

func b64(s string) []byte { return []byte(base64.StdEncoding.EncodeToString([]byte(s))) }

// TestErrors checks that every failure is a value errors.Is and errors.As
// can tell apart.
func TestErrors(t *testing.T) {
	deep := make([]byte, 0, 200)
	for range 65 {
		deep = append(deep, '[')
	}
	tests := []struct {
		name string
		in   Input
		opts Options
		is   []error
		not  []error
	}{
		{"duplicate key", jsonIn(`{"a":1,"a":2}`), Options{}, []error{ErrDuplicateKey, ErrInvalidJSON}, nil},
		{"duplicate key after unescaping", jsonIn(`{"a":1,"\u0061":1}`), Options{}, []error{ErrDuplicateKey}, nil},
		{"nested duplicate key", jsonIn(`{"x":[{"k":1,"k":1}]}`), Options{}, []error{ErrDuplicateKey}, nil},
		{"duplicate key in excluded value", jsonIn(`{"m":{"k":1,"k":2}}`), Options{Exclude: []string{"/m"}}, []error{ErrDuplicateKey}, nil},
		{"duplicate key outside included value", jsonIn(`{"a":1,"m":{"k":1,"k":2}}`), Options{Include: []string{"/a"}}, []error{ErrDuplicateKey}, nil},
		{"trailing comma", jsonIn(`{"a":1,}`), Options{}, []error{ErrInvalidJSON}, []error{ErrDuplicateKey}},
		{"trailing data", jsonIn(`{"a":1} {}`), Options{}, []error{ErrInvalidJSON}, nil},
		{"truncated", jsonIn(`{"a":`), Options{}, []error{ErrInvalidJSON}, nil},
		{"invalid UTF-8", jsonIn("\"\xff\""), Options{}, []error{ErrInvalidJSON}, nil},
		{"lone surrogate", jsonIn(`"\ud800"`), Options{}, []error{ErrInvalidJSON}, nil},
		{"number out of range", jsonIn(`{"n":1e999}`), Options{}, []error{ErrInvalidJSON}, nil},
		{"empty body in ModeJSON", Input{}, Options{Mode: ModeJSON}, []error{ErrInvalidJSON}, nil},
		{"JSON content type, not JSON", jsonIn(`amount=1`), Options{}, []error{ErrInvalidJSON}, nil},
		{"too deep", jsonIn(string(deep)), Options{}, []error{ErrTooDeep}, []error{ErrInvalidJSON}},
		{"bad form escape", formIn(`a=%zz`), Options{}, []error{ErrInvalidForm}, nil},
		{"form semicolon", formIn(`a=1;b=2`), Options{}, []error{ErrInvalidForm}, nil},
		{"bad base64", Input{Body: []byte("!!!"), IsBase64Encoded: true}, Options{}, []error{ErrInvalidBase64}, nil},
		{"pointer without slash", jsonIn(`{}`), Options{Include: []string{"a"}}, []error{ErrInvalidOptions}, nil},
		{"pointer bad tilde", jsonIn(`{}`), Options{Exclude: []string{"/a~2"}}, []error{ErrInvalidOptions}, nil},
		{"exclude whole body", jsonIn(`{}`), Options{Exclude: []string{""}}, []error{ErrInvalidOptions}, nil},
		{"negative MaxDepth", jsonIn(`{}`), Options{MaxDepth: -1}, []error{ErrInvalidOptions}, nil},
		{"MaxDepth too large", jsonIn(`{}`), Options{MaxDepth: 10001}, []error{ErrInvalidOptions}, nil},
		{"MaxDepth above MaxDepthLimit", jsonIn(`{}`), Options{MaxDepth: MaxDepthLimit + 1}, []error{ErrInvalidOptions}, nil},
		{"MaxDepth at the decoder's limit", jsonIn(`{}`), Options{MaxDepth: 10000}, []error{ErrInvalidOptions}, nil},
		{"unknown mode", jsonIn(`{}`), Options{Mode: 42}, []error{ErrInvalidOptions}, nil},
		{"empty header name", jsonIn(`{}`), Options{Headers: []string{""}}, []error{ErrInvalidOptions}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fp, err := Compute(tc.in, tc.opts)
			if err == nil {
				t.Fatalf("got %s, want an error", fp)
			}
			if fp != "" {
				t.Errorf("got fingerprint %q with error", fp)
			}
			for _, want := range tc.is {
				if !errors.Is(err, want) {
					t.Errorf("error %q does not match %q", err, want)
				}
			}
			for _, not := range tc.not {
				if errors.Is(err, not) {
					t.Errorf("error %q matches %q", err, not)
				}
			}
		})
	}

	_, err := Compute(jsonIn(`{}`), Options{Include: []string{"/ok", "bad"}})
	var pe *PointerError
	if !errors.As(err, &pe) || pe.Pointer != "bad" {
		t.Errorf("got %v, want a *PointerError for %q", err, "bad")
	}
	_, err = Compute(jsonIn(`{"a":{"b":1,"b":2}}`), Options{})
	if want := `fingerprint: duplicate object key: "b" at /a/b (byte offset 12)`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestVersions(t *testing.T) {
	in := jsonIn(`{"a":1}`)
	cur := mustCompute(t, in, Options{})
	if got := Version(cur); got != CurrentVersion {
		t.Errorf("Version(%q) = %q, want %q", cur, got, CurrentVersion)
	}
	if CurrentVersion != "v2" {
		t.Errorf("CurrentVersion = %q, want v2", CurrentVersion)
	}
	v1, err := ComputeVersion("v1", in, Options{})
	if err != nil || Version(v1) != "v1" || v1[2:] == cur[2:] {
		t.Errorf("ComputeVersion(v1) = %q, %v; want a v1 fingerprint other than %q", v1, err, cur)
	}
	f, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := f.ComputeVersion(Version(cur), in); err != nil || got != cur {
		t.Errorf("Fingerprinter.ComputeVersion = %q, %v; want %q", got, err, cur)
	}
	for _, v := range []string{"v0", "v3", "V1", "V2", "", "sha256"} {
		fp, err := ComputeVersion(v, in, Options{})
		if !errors.Is(err, ErrUnknownVersion) || fp != "" {
			t.Errorf("ComputeVersion(%q) = %q, %v; want ErrUnknownVersion", v, fp, err)
		}
	}
	for fp, want := range map[string]string{
		"v1:sha256:00":  "v1",
		"v7:blake3:ab":  "v7",
		"":              "",
		"no-version":    "",
		":sha256:00":    "",
		"v1":            "",
		"v12:sha256:00": "v12",
	} {
		if got := Version(fp); got != want {
			t.Errorf("Version(%q) = %q, want %q", fp, got, want)
		}
	}
}

// TestFingerprinterMatchesCompute checks the compiled and one-shot forms
// agree and that a Fingerprinter can be shared between goroutines.
func TestFingerprinterMatchesCompute(t *testing.T) {
	opts := Options{Exclude: []string{"/ts"}, Method: true, Query: []string{"q"}}
	f, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Method: "POST", Query: url.Values{"q": {"1"}}, ContentType: "application/json", Body: []byte(`{"a":1,"ts":2}`)}
	want := mustCompute(t, in, opts)
	done := make(chan string)
	for range 8 {
		go func() {
			var got string
			for range 100 {
				got, _ = f.Compute(in)
			}
			done <- got
		}()
	}
	for range 8 {
		if got := <-done; got != want {
			t.Errorf("Fingerprinter.Compute = %q, want %q", got, want)
		}
	}
}

// TestInputNotModified checks that computing does not change the input.
func TestInputNotModified(t *testing.T) {
	body := []byte(`{"b":[3,2,1],"a":"\u00e9"}`)
	orig := string(body)
	form := []byte("b=2&a=1")
	mustCompute(t, Input{Body: body}, Options{Mode: ModeJSON})
	mustCompute(t, Input{Body: form}, Options{Mode: ModeForm, Exclude: []string{"/b"}})
	if string(body) != orig || string(form) != "b=2&a=1" {
		t.Error("input body modified")
	}
}

// TestContentTypeFromHeaderKeys: when Input.ContentType is empty and
// Header holds the content type under several spellings of its name, the
// same one is always used: "Content-Type", else "content-type", else the
// first spelling in byte order. A fingerprint that depended on map
// iteration order would refuse faithful retries at random.
func TestContentTypeFromHeaderKeys(t *testing.T) {
	body := []byte(`{"b":1,"a":2}`)
	for _, tc := range []struct {
		header map[string][]string
		want   string // the content type that must be used
	}{
		{map[string][]string{"Content-Type": {"application/json"}, "content-type": {"text/plain"}, "CONTENT-TYPE": {"text/plain"}}, "application/json"},
		{map[string][]string{"content-type": {"application/json"}, "CONTENT-TYPE": {"text/plain"}, "Content-type": {"text/plain"}}, "application/json"},
		{map[string][]string{"CONTENT-TYPE": {"application/json"}, "Content-type": {"text/plain"}, "content-Type": {"text/plain"}}, "application/json"},
		{map[string][]string{"Content-type": {"text/plain"}, "CONTENT-TYPE": {}, "content-TYPE": {"application/json"}}, "text/plain"},
	} {
		want := mustCompute(t, Input{ContentType: tc.want, Body: body}, Options{})
		for range 50 {
			if got := mustCompute(t, Input{Header: tc.header, Body: body}, Options{}); got != want {
				t.Fatalf("%v: got %s, want the fingerprint under %q", tc.header, got, tc.want)
			}
		}
	}
}

// TestMaxDepthLimit: New accepts MaxDepth up to MaxDepthLimit and names the
// limit when refusing more; the depth allowed never changes a fingerprint.
func TestMaxDepthLimit(t *testing.T) {
	for _, tc := range []struct {
		max int
		ok  bool
	}{
		{1, true},
		{MaxDepthLimit, true},
		{MaxDepthLimit + 1, false},
		{10000, false},
	} {
		_, err := New(Options{MaxDepth: tc.max})
		if tc.ok != (err == nil) {
			t.Errorf("New(MaxDepth %d) = %v, want ok %v", tc.max, err, tc.ok)
		}
		if !tc.ok && (!errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), strconv.Itoa(MaxDepthLimit))) {
			t.Errorf("New(MaxDepth %d) = %v, want ErrInvalidOptions naming %d", tc.max, err, MaxDepthLimit)
		}
	}
	for _, depth := range []int{1, DefaultMaxDepth, MaxDepthLimit} {
		body := []byte(strings.Repeat(`{"b":0,"a":`, depth) + "1" + strings.Repeat("}", depth))
		want, err := Compute(Input{Body: body}, Options{Mode: ModeJSON, MaxDepth: depth})
		if err != nil {
			t.Fatalf("depth %d: %v", depth, err)
		}
		if got, err := Compute(Input{Body: body}, Options{Mode: ModeJSON, MaxDepth: MaxDepthLimit}); err != nil || got != want {
			t.Errorf("depth %d: %s %v under MaxDepthLimit, want %s as under MaxDepth %d", depth, got, err, want, depth)
		}
	}
}

// TestOptionListsAsSets: Include, Exclude, Query and Headers are sets: the
// order and repetition of their entries never change a fingerprint.
func TestOptionListsAsSets(t *testing.T) {
	in := Input{ContentType: "application/json", Body: []byte(`{"a":1,"b":{"c":2,"d":3},"e":4}`),
		Query: url.Values{"x": {"1"}, "y": {"2"}}, Header: http.Header{"X-A": {"1"}, "X-B": {"2"}}}
	for _, pair := range [][2]Options{
		{{Include: []string{"/a", "/b"}}, {Include: []string{"/b", "/a", "/a", "/b"}}},
		{{Exclude: []string{"/b/c", "/e"}}, {Exclude: []string{"/e", "/b/c", "/e"}}},
		{{Query: []string{"x", "y"}}, {Query: []string{"y", "x", "y"}}},
		{{Headers: []string{"x-a", "x-b"}}, {Headers: []string{"X-B", "x-a", "X-A"}}},
	} {
		a, b := mustCompute(t, in, pair[0]), mustCompute(t, in, pair[1])
		if a != b {
			t.Errorf("%+v and %+v give different fingerprints", pair[0], pair[1])
		}
	}
}
