package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"testing"
)

// goldenV1 pins v1 outputs. A v1 fingerprint stored today must be
// recomputable byte for byte for as long as records live, so these values
// never change: a failure here means v1's rules changed, which needs a new
// version instead.
// golden is a request whose fingerprint must never change.
type golden struct {
	name string
	in   Input
	opts Options
	want string
}

var goldenV1 = []golden{
	{"empty", Input{}, Options{},
		"v1:sha256:53cfb1c7ef1a5993e1c7130908ac678792ced143c27f0a286cbff329ebbc8947"},
	{"json", jsonIn(`{"b":[1.0,-0,1e21,9007199254740993],"a":"\u00e9\n"}`), Options{},
		"v1:sha256:b848f33354aeaf0f4f4c070ceed05c8e71b4851ebcd09c1825d3888c83ea6e66"},
	{"json exclude", jsonIn(`{"a":1,"meta":{"ts":1,"k":"v"},"l":[1,2]}`), Options{Exclude: []string{"/meta/ts", "/l/0"}},
		"v1:sha256:4095716a77a3877042531c885bc1e7769ebea950a71818fa2b9d35a6a2407cb0"},
	{"json include", jsonIn(`{"a":1,"b":null,"c":{"d":[true]}}`), Options{Include: []string{"/c/d/0", "/a", "/b", "/missing"}},
		"v1:sha256:6033751a8cc143b93853b5f8ce06aca109d4edd5fdc809fbe89b0819fe093108"},
	{"form", formIn(`b=2&a=1&a=0&c=%41`), Options{},
		"v1:sha256:e0bb54d9f2ac01d99a7ff2c1a7e3a937b7235c36ed9a67a397446d7c822e7fdb"},
	{"form include", formIn(`b=2&a=1`), Options{Include: []string{"", "/a", "/z"}},
		"v1:sha256:f17bb5a53ad3e39aa3f9fa2f24c9640b2f55b0b2ca9c985001c02374cccbb72a"},
	{"raw", Input{ContentType: "text/plain", Body: []byte("hello\n")}, Options{},
		"v1:sha256:e789e038338debc3c525de6cae353878dfde7e903e43e2f48725a2fb2713b82e"},
	{"everything", Input{
		Method: "POST", Path: "/orders",
		Query:       url.Values{"v": {"2", "1"}, "z": {""}},
		Header:      http.Header{"X-Region": {" eu "}, "User-Agent": {"x"}},
		ContentType: "application/json", Body: b64(`{"amount":100}`), IsBase64Encoded: true,
	}, Options{Method: true, Path: true, Query: []string{"v", "z", "missing"}, Headers: []string{"X-Region", "x-absent"}},
		"v1:sha256:d9f5a82d6d5bcbc7ec0b7aa06cf031ffb8d11ff26dc61f1c14a8d4ce16ff1cb5"},
}

func TestGoldenV1(t *testing.T) { checkGolden(t, "v1", goldenV1) }

// checkGolden checks that version computes each of goldens as it wants.
func checkGolden(t *testing.T, version string, goldens []golden) {
	t.Helper()
	for _, g := range goldens {
		got, err := ComputeVersion(version, g.in, g.opts)
		if err != nil {
			t.Errorf("%s: %v", g.name, err)
			continue
		}
		if got != g.want {
			t.Errorf("%s: %s output changed:\n got %s\nwant %s", g.name, version, got, g.want)
		}
	}
}

// TestV1Framing rebuilds the SHA-256 input of two requests by hand from
// the grammar documented in v1.go and checks Compute hashes exactly that.
func TestV1Framing(t *testing.T) {
	str := func(s string) string { return string(rune(len(s))) + s } // lengths < 128: one uvarint byte
	const magic = "idemkit.fingerprint.v1\x00"
	for _, tc := range []struct {
		in    Input
		opts  Options
		input string
	}{
		{jsonIn(`{"b":[1.0,-0,1e21,9007199254740993],"a":"\u00e9\n"}`), Options{},
			magic + "B" + "j" + "a" + `{"a":"é\n","b":[1,0,1e+21,9007199254740993]}` + "\xff"},
		{jsonIn(`{"a":1,"b":null}`), Options{Include: []string{"/b", "/a", "/c"}},
			magic + "B" + "j" + "s" + "\x03" + str("/a") + "\x01" + "1\xff" + str("/b") + "\x01" + "null\xff" + str("/c") + "\x00"},
		{formIn(`b=2&a=1&a=0`), Options{},
			magic + "B" + "f" + "a" + "\x02" + str("a") + "\x02" + str("1") + str("0") + str("b") + "\x01" + str("2")},
		{goldenV1[len(goldenV1)-1].in, goldenV1[len(goldenV1)-1].opts,
			magic + "M" + str("POST") + "P" + str("/orders") +
				"Q" + "\x03" + str("missing") + "\x00" + str("v") + "\x02" + str("2") + str("1") + str("z") + "\x01" + str("") +
				"H" + "\x02" + str("x-absent") + "\x00" + str("x-region") + "\x01" + str("eu") +
				"B" + "j" + "a" + `{"amount":100}` + "\xff"},
	} {
		sum := sha256.Sum256([]byte(tc.input))
		want := "v1:sha256:" + hex.EncodeToString(sum[:])
		if got, err := ComputeVersion("v1", tc.in, tc.opts); err != nil || got != want {
			t.Errorf("%q: got %s, want %s", tc.in.Body, got, want)
		}
	}
}
