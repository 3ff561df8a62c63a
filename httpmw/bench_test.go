package httpmw_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/internal/testing/testkit"
)

// BenchmarkMiddleware measures a guarded request over the in-memory store:
// a fresh execution (new key each time) and a replay, for response bodies
// of 200 B, 4 KB and 64 KB.
func BenchmarkMiddleware(b *testing.B) {
	reqBody := []byte(`{"amount":1000,"currency":"eur","customer":"cus_42"}`)
	for _, size := range []int{200, 4 << 10, 64 << 10} {
		body := []byte(testkit.OrderBody(size))
		next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Location", "/orders/ord_1")
			w.WriteHeader(201)
			w.Write(body)
		})
		name := strconv.Itoa(size) + "B"
		for _, mode := range []string{"fresh", "replay"} {
			b.Run(mode+"/"+name, func(b *testing.B) {
				h, _ := setup(b, httpmw.Config{}, next)
				r := httptest.NewRequest("POST", "/orders", nil)
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Authorization", "Bearer token-b")
				r.Header.Set("Idempotency-Key", "k")
				keys := testkit.Keys(b.N)
				w := httptest.NewRecorder()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if mode == "fresh" {
						r.Header["Idempotency-Key"] = []string{keys[i]}
					}
					r.Body = readCloser{bytes.NewReader(reqBody)}
					r.ContentLength = int64(len(reqBody))
					w.Body.Reset()
					h.ServeHTTP(w, r)
					if w.Body.Len() != size {
						b.Fatal(w.Code, w.Body.Len())
					}
				}
			})
		}
	}
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }
