package fingerprint_test

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/idemkit/idemkit/fingerprint"
)

func Example() {
	// Built once, at start-up: the Options are validated here.
	f, err := fingerprint.New(fingerprint.Options{
		Exclude: []string{"/meta/client_ts"}, // volatile: differs on every retry
		Method:  true,
		Path:    true,
	})
	if err != nil {
		panic(err)
	}

	first := fingerprint.Input{
		Method: "POST", Path: "/orders",
		Header:      http.Header{"User-Agent": {"shop-ios/1.0"}},
		ContentType: "application/json",
		Body:        []byte(`{"amount":1000,"currency":"EUR","meta":{"client_ts":"10:00:00"}}`),
	}
	stored, _ := f.Compute(first)
	fmt.Println(fingerprint.Version(stored), len(stored))

	// The retry comes from another client library: other member order,
	// spacing, number spelling and timestamp.
	retry := first
	retry.Header = http.Header{"User-Agent": {"shop-web/2.3"}}
	retry.Body = []byte(`{ "meta": {"client_ts": "10:00:07"}, "currency": "EUR", "amount": 1000.0 }`)

	// Compare under the stored record's version, whatever the current one is.
	fp, err := f.ComputeVersion(fingerprint.Version(stored), retry)
	fmt.Println(err == nil && fp == stored)

	// A changed amount is another intent.
	changed := retry
	changed.Body = []byte(`{"amount":1001,"currency":"EUR","meta":{"client_ts":"10:00:09"}}`)
	fp, _ = f.ComputeVersion(fingerprint.Version(stored), changed)
	fmt.Println(fp == stored)

	// Output:
	// v2 74
	// true
	// false
}

func ExampleCompute_include() {
	opts := fingerprint.Options{Include: []string{"/amount", "/coupon"}}
	a, _ := fingerprint.Compute(fingerprint.Input{ContentType: "application/json",
		Body: []byte(`{"amount":5}`)}, opts)
	b, _ := fingerprint.Compute(fingerprint.Input{ContentType: "application/json",
		Body: []byte(`{"amount":5,"coupon":null}`)}, opts)
	fmt.Println(a == b) // a missing coupon is not a null coupon
	// Output: false
}

func ExampleOptions_query() {
	order := func(query url.Values) fingerprint.Input {
		return fingerprint.Input{ContentType: "application/json", Body: []byte(`{"amount":5}`), Query: query}
	}
	fp := func(opts fingerprint.Options, in fingerprint.Input) string {
		s, _ := fingerprint.Compute(in, opts)
		return s
	}
	var whole fingerprint.Options // the default: every query parameter counts
	fmt.Println(fp(whole, order(nil)) == fp(whole, order(url.Values{"dryRun": {"true"}})))
	fmt.Println(fp(whole, order(url.Values{"a": {"1"}, "b": {"2"}})) == fp(whole, order(url.Values{"b": {"2"}, "a": {"1"}})))

	ignore := fingerprint.Options{IgnoreQuery: true} // for an operation whose query changes nothing
	fmt.Println(fp(ignore, order(nil)) == fp(ignore, order(url.Values{"utm_source": {"mail"}})))
	// Output:
	// false
	// true
	// true
}
