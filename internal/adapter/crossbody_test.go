package adapter_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/apigw"
)

// TestBinaryReplayAcrossFronts: a binary response stored through one kind
// of front replays as the same bytes through the other. A Lambda front
// stores it as the base64 text it returned (flagged); net/http replays the
// decoded bytes, never that text. net/http stores raw bytes; a Lambda
// front replays them base64-encoded and flagged, never as a JSON string
// that would replace them.
func TestBinaryReplayAcrossFronts(t *testing.T) {
	bin := []byte{0x00, 0xff, 0xfe, 0x80, 'P', 'K'}
	for _, first := range []string{"v2", "httpmw"} {
		t.Run("first "+first, func(t *testing.T) {
			g := testguard.Mem(t)
			runs := 0
			v2 := apigw.WrapV2(g, apigw.Config{Tenant: apigw.SingleTenant("t")}, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
				runs++
				return events.APIGatewayV2HTTPResponse{StatusCode: 201, Headers: map[string]string{"Content-Type": "application/zip"},
					Body: base64.StdEncoding.EncodeToString(bin), IsBase64Encoded: true}, nil
			})
			mw := httpmw.New(g, httpmw.Config{Tenant: func(context.Context, *http.Request) (string, error) { return "t", nil }})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs++
				w.Header().Set("Content-Type", "application/zip")
				w.WriteHeader(201)
				w.Write(bin)
			}))
			viaV2 := func() (body []byte, replayed bool) {
				ev := v2Post("POST /orders", "/orders", "", map[string]string{"idempotency-key": "k", "content-type": "application/json"}, `{"amount":1}`)
				r, err := v2(context.Background(), ev)
				if err != nil || r.StatusCode != 201 || !r.IsBase64Encoded || r.Headers["Content-Type"] != "application/zip" {
					t.Fatalf("v2: %d base64=%v %v %v", r.StatusCode, r.IsBase64Encoded, r.Headers, err)
				}
				b, err := base64.StdEncoding.DecodeString(r.Body)
				if err != nil {
					t.Fatalf("v2 body %q: %v", r.Body, err)
				}
				return b, r.Headers["Idempotent-Replayed"] == "true"
			}
			viaMW := func() ([]byte, bool) {
				r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"amount":1}`))
				r.Header.Set("Idempotency-Key", "k")
				r.Header.Set("Content-Type", "application/json")
				w := httptest.NewRecorder()
				mw.ServeHTTP(w, r)
				if w.Code != 201 || w.Header().Get("Content-Type") != "application/zip" {
					t.Fatalf("httpmw: %d %v", w.Code, w.Header())
				}
				return w.Body.Bytes(), w.Header().Get("Idempotent-Replayed") == "true"
			}
			send := map[string]func() ([]byte, bool){"v2": viaV2, "httpmw": viaMW}
			if b, rep := send[first](); rep || !bytes.Equal(b, bin) {
				t.Fatalf("first: %x replayed=%v, want %x", b, rep, bin)
			}
			for _, name := range []string{"v2", "httpmw"} {
				if b, rep := send[name](); !rep || !bytes.Equal(b, bin) {
					t.Errorf("replay through %s: %x replayed=%v, want %x", name, b, rep, bin)
				}
			}
			if runs != 1 {
				t.Errorf("handlers ran %d times, want 1", runs)
			}
		})
	}
}
