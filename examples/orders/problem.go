package orders

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// ProblemBase prefixes the type URI of every problem the example itself
// answers. The kit's own refusals (key missing, fingerprint mismatch, in
// flight, ...) keep their types under https://idemkit.dev/problems/; both
// are RFC 9457 problem details with the same members and headers.
const ProblemBase = "https://idemkit.dev/examples/orders/problems/"

// The example's problem types.
const (
	TypeValidation       = ProblemBase + "validation"              // 400: the body is not a valid request
	TypeUnsupportedMedia = ProblemBase + "unsupported-media"       // 415: the body is not JSON
	TypeNotFound         = ProblemBase + "not-found"               // 404: no such order for this caller, or no such route
	TypeCardDeclined     = ProblemBase + "card-declined"           // 402: the processor declined the card
	TypeKeyReused        = ProblemBase + "key-reused"              // 422: the key's first run, whose record is gone, stored another order or payment
	TypeProcessorDown    = ProblemBase + "processor-unavailable"   // 503: the processor did not answer; retry with the same key
	TypeTemporarilyDown  = ProblemBase + "temporarily-unavailable" // 503: a dependency failed; retry with the same key
	TypeInternal         = ProblemBase + "internal"                // 500: a bug; retry with the same key
	TypeTenantMissing    = ProblemBase + "tenant-missing"          // 500: no authenticated caller (misconfiguration)
	TypePayloadTooLarge  = ProblemBase + "payload-too-large"       // 413: body over 10 MB (local server only)
	problemContentType   = "application/problem+json"
)

// Problem is an RFC 9457 problem detail.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	// InvalidParams lists what is wrong with a request body, in a fixed
	// order so that a replay and a re-execution say the same.
	InvalidParams []InvalidParam `json:"invalidParams,omitempty"`
	// RetryAfter is the whole seconds also sent in the Retry-After header.
	RetryAfter int `json:"retryAfter,omitempty"`
}

// InvalidParam names one invalid member of a request body.
type InvalidParam struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Bounds of what a problem repeats from a request (an id, a member name),
// so that a hostile request cannot make a large answer, or a large stored
// replay of one.
const (
	MaxProblemDetail = 300 // bytes of Detail
	MaxInvalidParams = 20  // entries of InvalidParams
	MaxParamName     = 64  // bytes of an InvalidParam's Name
	MaxParamReason   = 200 // bytes of an InvalidParam's Reason
)

// Response returns p as an HTTP API response. Text that may repeat request
// input is bounded (MaxProblemDetail and the others, cut with "…") and
// HTML-escaped by the JSON encoding (<, > and & as \u003c, \u003e,
// \u0026), and the response says nosniff, so a browser never renders
// echoed input as markup.
func (p *Problem) Response() events.APIGatewayV2HTTPResponse {
	q := *p
	q.Detail = truncate(q.Detail, MaxProblemDetail)
	if len(q.InvalidParams) > 0 {
		n := min(len(q.InvalidParams), MaxInvalidParams)
		q.InvalidParams = make([]InvalidParam, n)
		for i, ip := range p.InvalidParams[:n] {
			q.InvalidParams[i] = InvalidParam{Name: truncate(ip.Name, MaxParamName), Reason: truncate(ip.Reason, MaxParamReason)}
		}
	}
	var b strings.Builder
	if err := json.NewEncoder(&b).Encode(&q); err != nil {
		panic("orders: marshal problem: " + err.Error()) // strings and ints only
	}
	h := map[string]string{"Content-Type": problemContentType, "X-Content-Type-Options": "nosniff"}
	if p.RetryAfter > 0 {
		h["Retry-After"] = strconv.Itoa(p.RetryAfter)
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: p.Status, Headers: h, Body: strings.TrimSuffix(b.String(), "\n")}
}

// truncate cuts s to at most limit bytes, on a rune boundary, ending it with
// "…" when it was cut. Invalid UTF-8 is replaced, so the cut is clean.
func truncate(s string, limit int) string {
	if len(s) <= limit && utf8.ValidString(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= limit {
		return s
	}
	const ellipsis = "…"
	cut := limit - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

func notFound(detail string) events.APIGatewayV2HTTPResponse {
	return (&Problem{Type: TypeNotFound, Title: "Not found", Status: 404, Detail: detail}).Response()
}

func invalid(params []InvalidParam) events.APIGatewayV2HTTPResponse {
	return (&Problem{Type: TypeValidation, Title: "Invalid request body", Status: 400,
		Detail:        "The request body is not valid; see invalidParams. Fix it and send it with a new Idempotency-Key: this key keeps this answer.",
		InvalidParams: params}).Response()
}

// keyReused is the answer to a key whose first run, its record gone,
// stored another order or payment (kind) under the ID the key derives.
func keyReused(kind string) events.APIGatewayV2HTTPResponse {
	return (&Problem{Type: TypeKeyReused, Title: "Idempotency key reused", Status: 422,
		Detail: "This Idempotency-Key was first used, longer ago than its record is kept, for another " + kind + ". Nothing was stored for this request; send it under a new Idempotency-Key."}).Response()
}
