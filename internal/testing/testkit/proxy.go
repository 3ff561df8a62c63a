package testkit

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
)

// Proxy serves a reverse proxy to target until the test ends, and
// returns its URL. The proxy drops the request headers dropRequest and
// the answer headers dropAnswer, and names itself in the answer's Via
// (1.1 test-proxy), as an intermediary does.
func Proxy(t testing.TB, target string, dropRequest, dropAnswer []string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(u)
		for _, h := range dropRequest {
			pr.Out.Header.Del(h)
		}
	}}
	p.ModifyResponse = func(r *http.Response) error {
		for _, h := range dropAnswer {
			r.Header.Del(h)
		}
		r.Header.Set("Via", "1.1 test-proxy")
		return nil
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL
}
