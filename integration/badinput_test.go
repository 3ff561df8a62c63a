package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
)

// Attributes of a record item, as package dynamo documents its layout:
// TestBadInputs damages stored items by hand.
const (
	attrState        = "st"
	attrStatus       = "sc"
	attrBody         = "sb"
	attrBodyEncoding = "se"
)

// TestBadInputs is the catalogue of hostile or malformed inputs in
// docs/RELIABILITY.md, each through the v2 adapter against dynalite, with
// the answer it must get and the handler runs it may cause. Rows that
// prime a record first send a valid request for the same key.
func TestBadInputs(t *testing.T) {
	t.Parallel()
	store, raw, table := newStore(t, nil, dynamo.Options{})
	g := testguard.New(t, idemkit.Config{Store: store})
	ctx := context.Background()
	big := `{"items":"` + strings.Repeat("x", 4096) + `"}`
	setAttr := func(t *testing.T, sc idemkit.Scope, name string, v types.AttributeValue) {
		_, err := raw.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(table), Key: map[string]types.AttributeValue{dynamo.DefaultKeyAttr: &types.AttributeValueMemberS{Value: sc.ID(false)}},
			UpdateExpression: aws.String("SET #a = :v"), ExpressionAttributeNames: map[string]string{"#a": name},
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": v},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	truncateBody := func(t *testing.T, sc idemkit.Scope) {
		out, err := raw.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{dynamo.DefaultKeyAttr: &types.AttributeValueMemberS{Value: sc.ID(false)}}})
		if err != nil || out.Item == nil {
			t.Fatalf("get: %v", err)
		}
		if enc, _ := out.Item[attrBodyEncoding].(*types.AttributeValueMemberS); enc == nil || enc.Value != "zstd" {
			t.Fatalf("body not compressed: %v", out.Item[attrBodyEncoding])
		}
		b := out.Item[attrBody].(*types.AttributeValueMemberB).Value
		setAttr(t, sc, attrBody, &types.AttributeValueMemberB{Value: b[:len(b)/2]})
	}
	cases := []struct {
		name    string
		method  string
		tenant  string
		keys    []string // header values; nil: no header
		body    string
		prime   string                               // body of a valid first request with the same key
		corrupt func(t *testing.T, sc idemkit.Scope) // applied to the primed record
		status  int
		problem string // "" for a handler response; "replay" for a replay
		runs    int    // handler runs caused by the row (prime included)
	}{
		{name: "no key", keys: nil, status: 400, problem: "key-missing"},
		{name: "empty key", keys: []string{""}, status: 400, problem: "key-invalid"},
		{name: "empty quoted key", keys: []string{`""`}, status: 400, problem: "key-invalid"},
		{name: "key of 256 bytes", keys: []string{strings.Repeat("k", 256)}, status: 400, problem: "key-invalid"},
		{name: "key of 255 bytes", keys: []string{strings.Repeat("m", 255)}, status: 201, runs: 1},
		{name: "non-ASCII key", keys: []string{"clé"}, status: 400, problem: "key-invalid"},
		{name: "control byte in key", keys: []string{"a\x01b"}, status: 400, problem: "key-invalid"},
		{name: "space in bare key", keys: []string{"a b"}, status: 400, problem: "key-invalid"},
		{name: "two different values", keys: []string{"a1, b1"}, status: 400, problem: "key-invalid"},
		{name: "unterminated quote", keys: []string{`"abc`}, status: 400, problem: "key-invalid"},
		{name: "key with parameters", keys: []string{`"abc";x=1`}, status: 400, problem: "key-invalid"},
		{name: "same value twice is one key", keys: []string{"dup-1, dup-1"}, status: 201, runs: 1},
		{name: "quoted then bare is a replay", keys: []string{"q-1"}, prime: `{"amount":1}`, status: 201, problem: "replay", runs: 1},
		{name: "invalid JSON body", keys: []string{"bad-json"}, body: `{"amount":`, status: 400, problem: "body-invalid"},
		{name: "duplicate JSON member", keys: []string{"dup-member"}, body: `{"a":1,"a":2}`, status: 400, problem: "body-invalid"},
		{name: "same key other body", keys: []string{"fp-1"}, prime: `{"amount":1}`, body: `{"amount":2}`, status: 422, problem: "fingerprint-mismatch", runs: 1},
		{name: "same key reordered JSON is a replay", keys: []string{"fp-2"}, prime: `{"a":1,"b":2.0}`, body: "{ \"b\" : 2, \"a\":1 }", status: 201, problem: "replay", runs: 1},
		{name: "no tenant", tenant: "-", keys: []string{"nt-1"}, status: 500, problem: "tenant-missing"},
		{name: "GET ignores the key", method: "GET", keys: []string{"get-1"}, prime: "", status: 201, runs: 1},
		{name: "expired UUIDv7 key", keys: []string{"018cc251-f400-7000-8000-000000000000"}, status: 400, problem: "key-expired"},
		{name: "stored record with an unknown state", keys: []string{"corrupt-1"}, prime: `{"amount":1}`,
			corrupt: func(t *testing.T, sc idemkit.Scope) {
				setAttr(t, sc, attrState, &types.AttributeValueMemberS{Value: "done"})
			},
			status: 500, problem: "record-corrupt", runs: 1},
		{name: "stored record with a truncated compressed body", keys: []string{"corrupt-2"}, prime: big, body: big,
			corrupt: truncateBody, status: 500, problem: "record-corrupt", runs: 1},
		{name: "stored record with a status as a string", keys: []string{"corrupt-3"}, prime: `{"amount":1}`,
			corrupt: func(t *testing.T, sc idemkit.Scope) {
				setAttr(t, sc, attrStatus, &types.AttributeValueMemberS{Value: "201"})
			},
			status: 500, problem: "record-corrupt", runs: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBusiness(nil)
			if tc.body == big {
				b.pad = 4096 // a large, compressible response: stored compressed
			}
			h := wrap(g, b, "POST /payments")
			tenant := "acme"
			if tc.tenant == "-" {
				tenant = ""
			}
			body := tc.body
			if body == "" {
				body = `{"amount":1}`
			}
			mk := func(body string) events.APIGatewayV2HTTPRequest {
				ev := event(tenant, "/payments", "", body)
				if tenant == "" {
					ev.RequestContext.Authorizer = nil
				}
				if tc.method != "" {
					ev.RequestContext.HTTP.Method = tc.method
				}
				if tc.keys != nil {
					ev.Headers["idempotency-key"] = strings.Join(tc.keys, ",")
				}
				return ev
			}
			key := ""
			if len(tc.keys) > 0 {
				key = tc.keys[0]
			}
			sc := idemkit.Scope{Tenant: tenant, Operation: "POST /payments", Key: key}
			var first answer
			if tc.prime != "" {
				pev := mk(tc.prime)
				if tc.name == "quoted then bare is a replay" {
					pev.Headers["idempotency-key"] = `"` + key + `"`
				}
				first = call(ctx, h, pev)
				if first.Status != 201 || first.Replay {
					t.Fatalf("prime: %v", first)
				}
				if tc.corrupt != nil {
					tc.corrupt(t, sc)
				}
			}
			a := call(ctx, h, mk(body))
			if tc.method == "GET" {
				a = call(ctx, h, mk(body)) // a second GET runs again
				tc.runs = 2
			}
			switch {
			case a.Status != tc.status:
				t.Fatalf("%v; want %d %s", a, tc.status, tc.problem)
			case tc.problem == "replay" && (!a.Replay || a.Body != first.Body):
				t.Fatalf("%v; want the replay of %s", a, first.Body)
			case tc.problem != "replay" && a.Problem != tc.problem:
				t.Fatalf("%v; want problem %q", a, tc.problem)
			case tc.problem != "" && tc.problem != "replay" && a.Header["Content-Type"] != "application/problem+json":
				t.Fatalf("problem without application/problem+json: %v", a.Header)
			}
			if got := int(b.runs.Load()); got != tc.runs {
				t.Fatalf("handler ran %d times, want %d", got, tc.runs)
			}
		})
	}
	summary(t, "rows=%d, each answered as catalogued", len(cases))
}
