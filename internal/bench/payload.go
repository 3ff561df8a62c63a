// Package bench measures what idemkit costs a Lambda handler: DynamoDB
// round trips and capacity units per request, latency overhead against
// raw SDK calls, CPU and allocations, cold start and binary size. Its
// command, cmd/idembench, is what `make bench` runs; docs/PERFORMANCE.md
// records a run and explains the figures.
package bench

import (
	"bytes"
	"fmt"
	"math/rand/v2"
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
		panic(fmt.Sprintf("bench: JSON(%d) made %d bytes", size, b.Len()))
	}
	return b.Bytes()
}
