package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/url"
	"runtime"
	"strings"
	"testing"
)

// goldenV2 pins v2 outputs; like goldenV1, these values never change.
var goldenV2 = []golden{
	{"empty", Input{}, Options{},
		"v2:sha256:f3e6a5036f4940c24874c8c986da2197b298f62c374fadf50e136c004553b9c3"},
	{"json", jsonIn(`{"b":[1.0,-0,1e21,9007199254740993],"a":"\u00e9\n"}`), Options{},
		"v2:sha256:59bfa5eb7ca7a2c0b748f5e8306d4346318135757166ab1c815aa680f58910c5"},
	{"json and query", Input{ContentType: "application/json", Body: []byte(`{"amount":100}`),
		Query: url.Values{"dryRun": {"true"}, "a": {"2", "1"}}}, Options{},
		"v2:sha256:6a02f2da11a2b543ea375c6dd329ac3521508358dc3480f539b58df9d4aedb4e"},
	{"ignore query", Input{ContentType: "application/json", Body: []byte(`{"amount":100}`),
		Query: url.Values{"dryRun": {"true"}}}, Options{IgnoreQuery: true},
		"v2:sha256:80bfa89248190ae4f38dfb080e151c97b7fa0f78864c03b35ab28bbf0f0539e0"},
	{"path", Input{Path: "/orders/2/capture", Body: []byte(`{}`)}, Options{Path: true},
		"v2:sha256:98ba7955f3d0193ddff122481629682ed1f512fe3124daa238cffe3c76a8e305"},
}

func TestGoldenV2(t *testing.T) { checkGolden(t, "v2", goldenV2) }

// TestV2Framing rebuilds the SHA-256 input from the grammar in v2.go.
func TestV2Framing(t *testing.T) {
	str := func(s string) string { return string(rune(len(s))) + s }
	const magic = "idemkit.fingerprint.v2\x00"
	for _, tc := range []struct {
		in    Input
		opts  Options
		input string
	}{
		{jsonIn(`{"b":1,"a":2}`), Options{},
			magic + "A\x00" + "B" + "j" + "a" + `{"a":2,"b":1}` + "\xff"},
		{Input{Query: url.Values{"z": {""}, "a": {"2", "1"}}, Body: []byte("x")}, Options{},
			magic + "A\x02" + str("a") + "\x02" + str("2") + str("1") + str("z") + "\x01" + str("") + "B" + "r" + str("x")},
		{Input{Query: url.Values{"a": {"1"}}, Body: []byte("x")}, Options{Query: []string{"a", "b"}},
			magic + "Q\x02" + str("a") + "\x01" + str("1") + str("b") + "\x00" + "B" + "r" + str("x")},
		{Input{Query: url.Values{"a": {"1"}}, Body: []byte("x")}, Options{IgnoreQuery: true},
			magic + "B" + "r" + str("x")},
		{Input{Method: "POST", Path: "/o/1", Body: []byte("x")}, Options{Method: true, Path: true},
			magic + "M" + str("POST") + "P" + str("/o/1") + "A\x00" + "B" + "r" + str("x")},
	} {
		sum := sha256.Sum256([]byte(tc.input))
		want := "v2:sha256:" + hex.EncodeToString(sum[:])
		if got := mustCompute(t, tc.in, tc.opts); got != want {
			t.Errorf("%+v: got %s, want %s", tc.in, got, want)
		}
	}
}

// TestV1StillComparable: a request that v1 could fingerprint completely
// (no query string) gets the v1 fingerprint it always had, so records
// stored under v1 still match; one with a query string is refused, since
// v1 cannot show the query is the same.
func TestV1StillComparable(t *testing.T) {
	in := jsonIn(`{ "amount": 100.0 }`)
	got, err := ComputeVersion("v1", in, Options{})
	if want := goldenV1Of(t, jsonIn(`{"amount":100}`)); err != nil || got != want {
		t.Errorf("v1 of a request without query = %q, %v; want %q", got, err, want)
	}
	in.Query = url.Values{"dryRun": {"true"}}
	if got, err := ComputeVersion("v1", in, Options{}); !errors.Is(err, ErrNotComparable) {
		t.Errorf("v1 of a request with a query = %q, %v; want ErrNotComparable", got, err)
	}
	for _, opts := range []Options{{IgnoreQuery: true}, {Query: []string{"dryRun"}}} {
		if _, err := ComputeVersion("v1", in, opts); err != nil {
			t.Errorf("v1 under %+v: %v", opts, err)
		}
	}
}

// goldenV1Of returns the v1 fingerprint of in computed by hand from the v1
// grammar (whole JSON body, already canonical, no other part).
func goldenV1Of(t *testing.T, in Input) string {
	t.Helper()
	sum := sha256.Sum256([]byte("idemkit.fingerprint.v1\x00" + "B" + "j" + "a" + string(in.Body) + "\xff"))
	return "v1:sha256:" + hex.EncodeToString(sum[:])
}

// TestSniffedJSONRefused: without a content type, a body that looks like
// JSON must be I-JSON under v2; v1 hashed it as raw bytes.
func TestSniffedJSONRefused(t *testing.T) {
	for _, body := range []string{
		`{"a":1,"a":2}`,
		`{"a":"\ud800"}`,
		`[1e400]`,
		`[1` + strings.Repeat("0", 400) + `]`,
		strings.Repeat("[", DefaultMaxDepth+1) + strings.Repeat("]", DefaultMaxDepth+1),
		` {"a":1`,
		`[INFO] not json`,
	} {
		in := Input{Body: []byte(body)}
		if fp, err := Compute(in, Options{}); !errors.Is(err, ErrInvalidJSON) && !errors.Is(err, ErrTooDeep) {
			t.Errorf("%.40s: Compute = %q, %v; want a body error", body, fp, err)
		}
		if _, err := ComputeVersion("v1", in, Options{}); err != nil {
			t.Errorf("%.40s: v1 = %v, want the raw-bytes fallback", body, err)
		}
	}
	// Not JSON-looking: raw bytes, as before.
	if _, err := Compute(Input{Body: []byte("hello")}, Options{}); err != nil {
		t.Errorf("raw body: %v", err)
	}
}

// TestDuplicatesEverywhere: a duplicate member name is refused wherever it
// is, also inside a value that Exclude removes or Include leaves out.
func TestDuplicatesEverywhere(t *testing.T) {
	body := `{"keep":1,"meta":{"x":1,"x":2}}`
	for _, opts := range []Options{
		{},
		{Exclude: []string{"/meta"}},
		{Include: []string{"/keep"}},
		{Include: []string{"/keep"}, Exclude: []string{"/meta"}},
	} {
		if _, err := Compute(jsonIn(body), opts); !errors.Is(err, ErrDuplicateKey) {
			t.Errorf("%+v: got %v, want ErrDuplicateKey", opts, err)
		}
	}
	// Equal after unescaping, in an array, deep.
	_, err := Compute(jsonIn(`[0,{"a":[{"\u0062":1,"b":2}]}]`), Options{})
	if want := `fingerprint: duplicate object key: "b" at /1/a/0/b (byte offset 21)`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// TestBodyString: a body given as a string fingerprints like the same
// bytes, in every mode and base64-encoded.
func TestBodyString(t *testing.T) {
	for _, in := range []Input{
		jsonIn(`{"b":1,"a":[1.0,"\u00e9"]}`),
		formIn(`b=2&a=1`),
		{ContentType: "text/plain", Body: []byte("hello")},
		{ContentType: "application/json", Body: b64(`{"a":1}`), IsBase64Encoded: true},
	} {
		s := in
		s.BodyString, s.Body = string(in.Body), nil
		if a, b := mustCompute(t, in, Options{}), mustCompute(t, s, Options{}); a != b {
			t.Errorf("%q: Body %s, BodyString %s", in.Body, a, b)
		}
	}
}

func TestIgnoreQueryWithQuery(t *testing.T) {
	if _, err := New(Options{IgnoreQuery: true, Query: []string{"a"}}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("got %v, want ErrInvalidOptions", err)
	}
}

// TestBodyStringNotCopied: a string body is read in place, in raw, JSON
// and base64 form: a call allocates far less than the body.
func TestBodyStringNotCopied(t *testing.T) {
	json := string(orderBody(memTestSize))
	for _, in := range []Input{
		{ContentType: "application/json", BodyString: json},
		{ContentType: "text/plain", BodyString: json},
	} {
		f, err := New(Options{})
		if err != nil {
			t.Fatal(err)
		}
		f.Compute(in) // warm the pool
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		const runs = 5
		for range runs {
			if _, err := f.Compute(in); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 16<<10 {
			t.Errorf("%s: %d bytes allocated per call for a %d-byte string body", in.ContentType, per, len(json))
		}
	}
}
