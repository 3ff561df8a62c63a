package adapter_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/alb"
	"github.com/idemkit/idemkit/lambda/apigw"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/observe"
)

// sizedFront sends one guarded POST with the given key, path and raw query
// (delivered as its front delivers a query: raw, or as parameters) and
// returns the status and the problem type's last segment, if any.
type sizedFront func(t *testing.T, key, path, query string) (status int, problem string)

// sizedFronts returns every adapter around one handler over g, counting
// its runs.
func sizedFronts(g *idemkit.Guard, runs *int) map[string]sizedFront {
	tenant := func(context.Context) (string, error) { return "tenant-a", nil }
	params := func(query string) (map[string]string, map[string][]string) {
		single, multi := map[string]string{}, map[string][]string{}
		for _, pair := range strings.Split(query, "&") {
			if pair == "" {
				continue
			}
			k, v, _ := strings.Cut(pair, "=")
			single[k] = v
			multi[k] = append(multi[k], v)
		}
		return single, multi
	}
	problem := func(ct, body string) string {
		if ct != "application/problem+json" {
			return ""
		}
		_, typ, _ := strings.Cut(body, `"type":"https://idemkit.dev/problems/`)
		typ, _, _ = strings.Cut(typ, `"`)
		return typ
	}
	v1 := apigw.WrapV1(g, apigw.Config{Tenant: apigw.SingleTenant("tenant-a")}, func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		*runs++
		return events.APIGatewayProxyResponse{StatusCode: 201}, nil
	})
	v2 := apigw.WrapV2(g, apigw.Config{Tenant: apigw.SingleTenant("tenant-a")}, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		*runs++
		return events.APIGatewayV2HTTPResponse{StatusCode: 201}, nil
	})
	url := apigw.WrapFunctionURL(g, apigw.Config{Tenant: apigw.SingleTenant("tenant-a")}, func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		*runs++
		return events.LambdaFunctionURLResponse{StatusCode: 201}, nil
	})
	lb := alb.Wrap(g, alb.Config{Tenant: alb.SingleTenant("tenant-a")}, func(context.Context, events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
		*runs++
		return events.ALBTargetGroupResponse{StatusCode: 201}, nil
	})
	mw := httpmw.New(g, httpmw.Config{Tenant: func(_ context.Context, r *http.Request) (string, error) { return tenant(r.Context()) }})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*runs++
		w.WriteHeader(201)
	}))
	return map[string]sizedFront{
		"v1": func(t *testing.T, key, path, query string) (int, string) {
			single, multi := params(query)
			r := testkit.Call(t, v1, events.APIGatewayProxyRequest{HTTPMethod: "POST", Path: path, Resource: "/{proxy+}",
				Headers: map[string]string{"Idempotency-Key": key}, MultiValueHeaders: map[string][]string{"Idempotency-Key": {key}},
				QueryStringParameters: single, MultiValueQueryStringParameters: multi})
			return r.StatusCode, problem(r.Headers["Content-Type"], r.Body)
		},
		"v2": func(t *testing.T, key, path, query string) (int, string) {
			ev := v2Post("$default", path, query, map[string]string{"idempotency-key": key}, "")
			r := testkit.Call(t, v2, ev)
			return r.StatusCode, problem(r.Headers["Content-Type"], r.Body)
		},
		"url": func(t *testing.T, key, path, query string) (int, string) {
			ev := urlPost(path, query, map[string]string{"idempotency-key": key}, "")
			r := testkit.Call(t, url, ev)
			return r.StatusCode, problem(r.Headers["Content-Type"], r.Body)
		},
		"alb": func(t *testing.T, key, path, query string) (int, string) {
			_, multi := params(query)
			r := testkit.Call(t, lb, events.ALBTargetGroupRequest{HTTPMethod: "POST", Path: path,
				MultiValueHeaders: map[string][]string{"idempotency-key": {key}}, MultiValueQueryStringParameters: multi})
			ct := ""
			if v := r.MultiValueHeaders["Content-Type"]; len(v) > 0 {
				ct = v[0]
			}
			return r.StatusCode, problem(ct, r.Body)
		},
		"httpmw": func(t *testing.T, key, path, query string) (int, string) {
			r := httptest.NewRequest(http.MethodPost, "/", nil)
			r.URL.Path, r.URL.RawQuery = path, query
			r.Header.Set("Idempotency-Key", key)
			w := httptest.NewRecorder()
			mw.ServeHTTP(w, r)
			b, _ := io.ReadAll(w.Body)
			return w.Code, problem(w.Header().Get("Content-Type"), string(b))
		},
	}
}

// TestFrontsBoundPathAndQuery: every front refuses, with a 414 problem
// and before the store, a guarded request whose path is over
// httpconfig.MaxPathLen bytes or whose query has more than
// httpconfig.MaxQueryParams parameters, however its front delivers the
// query; it reports ErrPathTooLong or ErrQueryTooLarge with a bounded
// operation. A request at either limit runs. (A 900 KB path used to be
// stored whole in the record and every log line.)
func TestFrontsBoundPathAndQuery(t *testing.T) {
	var names strings.Builder
	for i := range httpconfig.MaxQueryParams {
		if i > 0 {
			names.WriteByte('&')
		}
		names.WriteString("p" + strconv.Itoa(i) + "=1")
	}
	atLimit := names.String()
	longPath := "/" + strings.Repeat("a", httpconfig.MaxPathLen-1)
	for _, tc := range []struct {
		name, path, query string
		problem           string
		err               error
	}{
		{"path at the limit", longPath, "", "", nil},
		{"path over the limit", longPath + "b", "", "path-too-long", httpconfig.ErrPathTooLong},
		{"900 KB path", "/" + strings.Repeat("a", 900<<10), "", "path-too-long", httpconfig.ErrPathTooLong},
		{"query at the limit", "/orders", atLimit, "", nil},
		{"query over the limit", "/orders", atLimit + "&x=1", "query-too-large", httpconfig.ErrQueryTooLarge},
	} {
		for _, name := range []string{"v1", "v2", "url", "alb", "httpmw"} {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				var refused []observe.Event
				g, err := idemkit.New(idemkit.Config{Store: memstore.New(), Observer: observe.ObserverFunc(func(_ context.Context, e observe.Event) {
					if e.Kind == observe.EventRefused {
						refused = append(refused, e)
					}
				})})
				if err != nil {
					t.Fatal(err)
				}
				runs := 0
				st, p := sizedFronts(g, &runs)[name](t, "order-1", tc.path, tc.query)
				if tc.err == nil {
					if st != 201 || runs != 1 {
						t.Fatalf("%d %s, ran %d times; want 201", st, p, runs)
					}
					return
				}
				if st != 414 || p != tc.problem || runs != 0 {
					t.Fatalf("%d %s, ran %d times; want 414 %s, not run", st, p, runs, tc.problem)
				}
				if len(refused) != 1 || !errors.Is(refused[0].Err, tc.err) {
					t.Fatalf("refusals %v, want one %v", refused, tc.err)
				}
				if op := refused[0].Operation; len(op) > 256 {
					t.Errorf("reported operation of %d bytes", len(op))
				}
			})
		}
	}
}

// FuzzFrontQuery sends any raw query twice, with one key, through the
// fronts that read the query raw: each refuses it with 414 exactly when
// net/url would count more than httpconfig.MaxQueryParams parameters, and
// otherwise runs it once and replays it, never answering anything else.
func FuzzFrontQuery(f *testing.F) {
	for _, q := range []string{"", "a=1", "a=1&a=2&b", "a=%zz", "a=1;b", "&&&", "%", "a+b=c%20d",
		strings.Repeat("&", httpconfig.MaxQueryParams-1), strings.Repeat("&", httpconfig.MaxQueryParams)} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, query string) {
		over := strings.Count(query, "&") >= httpconfig.MaxQueryParams
		for _, name := range []string{"v2", "url", "httpmw"} {
			g := testguard.Mem(t)
			runs := 0
			send := sizedFronts(g, &runs)[name]
			for i := range 2 {
				st, p := send(t, "order-1", "/orders", query)
				switch {
				case over && (st != 414 || p != "query-too-large"):
					t.Fatalf("%s: %d %s, want 414 query-too-large", name, st, p)
				case !over && (st != 201 || p != ""):
					t.Fatalf("%s: request %d: %d %s, want 201", name, i, st, p)
				}
			}
			if want := map[bool]int{true: 0, false: 1}[over]; runs != want {
				t.Fatalf("%s: ran %d times, want %d", name, runs, want)
			}
		}
	})
}
