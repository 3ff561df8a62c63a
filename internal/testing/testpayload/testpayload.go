// Package testpayload holds the deterministic response bodies and the
// request the tests and the measurements (lab/bench) send: an order JSON,
// a payment-list JSON and an API Gateway event for POST /orders.
package testpayload

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Sizes are the response body sizes every measurement uses.
var Sizes = []int{200, 4 << 10, 64 << 10}

var (
	words = []string{"alpine", "basil", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper",
		"kestrel", "linden", "maple", "nectar", "onyx", "pepper", "quartz", "raven", "saffron", "timber",
		"umber", "violet", "willow", "xenon", "yarrow", "zephyr"}
	units      = []string{"piece", "box", "kg", "pack", "pair"}
	statuses   = []string{"accepted", "reserved", "backordered", "allocated"}
	warehouses = []string{"fra-1", "dub-2", "ams-1", "mad-3"}
)

// JSON returns a deterministic JSON order of exactly size bytes that
// compresses like a real API response: repeated field names, words from a
// small vocabulary, random ids and amounts. size must be at least 160.
func JSON(size int) []byte {
	r := rand.New(rand.NewPCG(uint64(size), 42))
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"id":"ord_%016x","status":"accepted","currency":"eur","customer":{"id":"cus_%08x","tier":"%s"},"lines":[`,
		r.Uint64(), r.Uint32(), words[r.IntN(len(words))])
	// Lines until the next one could overflow, then pad the note to size.
	for i := 0; ; i++ {
		line := fmt.Sprintf(`{"n":%d,"sku":"SKU-%05d","name":"%s %s %s","qty":%d,"unit":"%s","unit_amount":%d,"tax_rate":"0.%02d","status":"%s","warehouse":"%s"}`,
			i+1, r.IntN(100000), words[r.IntN(len(words))], words[r.IntN(len(words))], words[r.IntN(len(words))],
			1+r.IntN(9), units[r.IntN(len(units))], 100+r.IntN(99900), 5+r.IntN(20), statuses[r.IntN(len(statuses))], warehouses[r.IntN(len(warehouses))])
		if i > 0 {
			line = "," + line
		}
		if b.Len()+len(line)+len(`],"note":""}`) > size {
			break
		}
		b.WriteString(line)
	}
	b.WriteString(`],"note":"`)
	for b.Len() < size-2 {
		w := words[r.IntN(len(words))]
		if rest := size - 2 - b.Len(); len(w)+1 > rest {
			b.WriteString("zzzzzzzzzzzzzzzz"[:rest])
			break
		}
		b.WriteString(w)
		b.WriteByte(' ')
	}
	b.WriteString(`"}`)
	if b.Len() != size {
		panic(fmt.Sprintf("testpayload: JSON(%d) made %d bytes", size, b.Len()))
	}
	return b.Bytes()
}

var (
	cities  = []string{"Berlin", "Paris", "Madrid", "Dublin", "Vienna"}
	streets = []string{"Main", "Oak", "Elm", "Park"}
	first   = []string{"Anna", "Ben", "Chloe", "Dan", "Eva"}
	last    = []string{"Schmidt", "Martin", "Garcia", "Murphy"}
	brands  = []string{"visa", "mastercard", "amex"}
)

// APIJSON returns a deterministic JSON list of exactly size bytes shaped
// like a payment provider's list response: long random ids, epoch and
// RFC 3339 times, nulls, nested billing and card objects, receipt URLs.
// It has more entropy per record than JSON (ids are a larger share of
// it); compression choices are checked on both. size must be at least
// 120.
func APIJSON(size int) []byte {
	r := rand.New(rand.NewPCG(uint64(size), 7))
	var b bytes.Buffer
	b.WriteString(`{"object":"list","url":"/v1/charges","has_more":true,"data":[`)
	const tail = `],"next_page":""}`
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var rec bytes.Buffer
	for i := 0; ; i++ {
		rec.Reset()
		if i > 0 {
			rec.WriteByte(',')
		}
		ts := t0.Add(time.Duration(r.IntN(1e6)) * time.Second)
		name := first[r.IntN(len(first))] + " " + last[r.IntN(len(last))]
		brand := brands[r.IntN(len(brands))]
		fmt.Fprintf(&rec, `{"id":"ch_%016x%08x","object":"charge","amount":%d,"amount_captured":%d,"amount_refunded":0,`+
			`"balance_transaction":"txn_%016x%08x","billing_details":{"address":{"city":%q,"country":"DE","line1":"%d %s Street",`+
			`"line2":null,"postal_code":"%05d","state":null},"email":"%s@example.com","name":%q,"phone":null},"captured":true,`+
			`"created":%d,"created_at":%q,"currency":"eur","customer":"cus_%014x","description":"Order %d","livemode":false,`+
			`"metadata":{"order_id":"%d"},"paid":true,"payment_method":"pm_%016x%08x","payment_method_details":{"card":{"brand":%q,`+
			`"exp_month":%d,"exp_year":%d,"fingerprint":"%016x","funding":"credit","last4":"%04d"},"type":"card"},`+
			`"receipt_url":"https://pay.example.com/receipts/acct_%016x/rcpt_%016x%016x","refunded":false,"status":"succeeded"}`,
			r.Uint64(), r.Uint32(), r.IntN(100000), r.IntN(100000), r.Uint64(), r.Uint32(),
			cities[r.IntN(len(cities))], r.IntN(300), streets[r.IntN(len(streets))], r.IntN(99999),
			strings.ToLower(strings.ReplaceAll(name, " ", ".")), name,
			ts.Unix(), ts.Format(time.RFC3339), r.Uint64()>>8, r.IntN(1e6), r.IntN(1e6),
			r.Uint64(), r.Uint32(), brand, 1+r.IntN(12), 2027+r.IntN(6), r.Uint64(), r.IntN(10000),
			r.Uint64(), r.Uint64(), r.Uint64())
		if b.Len()+rec.Len()+len(tail) > size {
			break
		}
		b.Write(rec.Bytes())
	}
	// The rest is the next page's cursor: random hex.
	b.WriteString(`],"next_page":"`)
	for b.Len() < size-2 {
		b.WriteByte("0123456789abcdef"[r.IntN(16)])
	}
	b.WriteString(`"}`)
	if b.Len() != size {
		panic(fmt.Sprintf("testpayload: APIJSON(%d) made %d bytes", size, b.Len()))
	}
	return b.Bytes()
}

// Event returns the API Gateway (HTTP API, payload 2.0) request the bench
// sends: POST /orders with a small JSON body and key as its
// Idempotency-Key.
func Event(key string) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "POST /orders", RawPath: "/orders",
		Headers: map[string]string{"content-type": "application/json", "idempotency-key": key},
		Body:    `{"customer":"cus_42","currency":"eur","lines":[{"sku":"SKU-00042","qty":2}]}`,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: "/orders"},
		},
	}
}
