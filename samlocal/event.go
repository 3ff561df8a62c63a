package samlocal

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"mime"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// MaxBody is the largest request body the front passes on: Lambda's
// invocation payload limit (6 MB) less room for the event around it.
const MaxBody = 5 << 20

// errBodyTooLarge is readBody's error past MaxBody.
var errBodyTooLarge = errors.New("samlocal: request body too large")

// body is a request body as API Gateway passes it: text, or base64.
type body struct {
	text   string
	base64 bool
	n      int
}

func readBody(r *http.Request) (body, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		return body{}, err
	}
	if len(b) > MaxBody {
		return body{}, errBodyTooLarge
	}
	if len(b) == 0 {
		return body{}, nil
	}
	if isText(r.Header.Get("Content-Type")) {
		return body{text: string(b), n: len(b)}, nil
	}
	return body{text: base64.StdEncoding.EncodeToString(b), base64: true, n: len(b)}, nil
}

// isText reports whether API Gateway passes a body of this media type as
// text; it base64-encodes all others.
func isText(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return strings.HasPrefix(mt, "text/") || mt == "application/json" || strings.HasSuffix(mt, "+json") ||
		mt == "application/xml" || strings.HasSuffix(mt, "+xml") || mt == "application/javascript"
}

// request is what both payload formats are made of.
type request struct {
	r         *http.Request
	body      body
	route     *Route
	params    map[string]string
	claims    *Claims
	requestID string
	now       time.Time
}

func (q *request) sourceIP() string {
	ip, _, err := net.SplitHostPort(q.r.RemoteAddr)
	if err != nil {
		return q.r.RemoteAddr
	}
	return ip
}

// headers returns the request's headers as API Gateway passes them, lower
// case, with the forwarding headers it adds; cookies apart (payload 2.0).
func (q *request) headers(splitCookies bool) (map[string]string, map[string][]string, []string) {
	single := map[string]string{}
	multi := map[string][]string{}
	var cookies []string
	for name, vs := range q.r.Header {
		n := strings.ToLower(name)
		if n == "cookie" && splitCookies {
			for _, v := range vs {
				for _, c := range strings.Split(v, ";") {
					if c = strings.TrimSpace(c); c != "" {
						cookies = append(cookies, c)
					}
				}
			}
			continue
		}
		single[n] = strings.Join(vs, ",")
		multi[n] = append([]string(nil), vs...)
	}
	extra := map[string]string{"host": q.r.Host, "x-forwarded-for": q.sourceIP(), "x-forwarded-proto": "http"}
	if _, port, err := net.SplitHostPort(q.r.Host); err == nil {
		extra["x-forwarded-port"] = port
	}
	if q.body.n > 0 {
		extra["content-length"] = strconv.Itoa(q.body.n)
	}
	for k, v := range extra {
		single[k] = v
		multi[k] = []string{v}
	}
	return single, multi, cookies
}

// LocalAPIID is the apiId of every local route's events.
const LocalAPIID = "samlocal"

// eventV2 is the payload 2.0 event of an HTTP API.
func (q *request) eventV2() events.APIGatewayV2HTTPRequest {
	headers, _, cookies := q.headers(true)
	var query map[string]string
	if qs := q.r.URL.Query(); len(qs) > 0 {
		query = make(map[string]string, len(qs))
		for k, vs := range qs {
			query[k] = strings.Join(vs, ",")
		}
	}
	key := q.route.RouteKey()
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: key, RawPath: q.r.URL.Path, RawQueryString: q.r.URL.RawQuery,
		Cookies: cookies, Headers: headers, QueryStringParameters: query, PathParameters: q.params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: key, AccountID: AccountID, Stage: "$default", RequestID: q.requestID, APIID: LocalAPIID,
			DomainName: q.r.Host, Time: q.now.UTC().Format("02/Jan/2006:15:04:05 -0700"), TimeEpoch: q.now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: q.r.Method, Path: q.r.URL.Path,
				Protocol: q.r.Proto, SourceIP: q.sourceIP(), UserAgent: q.r.UserAgent()},
		},
		Body: q.body.text, IsBase64Encoded: q.body.base64,
	}
	if q.claims != nil {
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: q.claims.Claims, Scopes: q.claims.Scopes}}
	}
	return ev
}

// eventV1 is the payload 1.0 event: a REST API's, or an HTTP API's route
// with PayloadFormatVersion 1.0.
func (q *request) eventV1() events.APIGatewayProxyRequest {
	headers, multi, _ := q.headers(false)
	var query map[string]string
	var multiQuery map[string][]string
	if qs := q.r.URL.Query(); len(qs) > 0 {
		query, multiQuery = map[string]string{}, map[string][]string{}
		for k, vs := range qs {
			query[k] = vs[len(vs)-1]
			multiQuery[k] = vs
		}
	}
	resource := q.route.Path
	if resource == "$default" {
		resource = "/{proxy+}"
	}
	ev := events.APIGatewayProxyRequest{
		Resource: resource, Path: q.r.URL.Path, HTTPMethod: q.r.Method, Headers: headers, MultiValueHeaders: multi,
		QueryStringParameters: query, MultiValueQueryStringParameters: multiQuery, PathParameters: q.params,
		RequestContext: events.APIGatewayProxyRequestContext{
			AccountID: AccountID, ResourcePath: resource, Stage: "local", RequestID: q.requestID, APIID: LocalAPIID,
			HTTPMethod: q.r.Method, Path: q.r.URL.Path, DomainName: q.r.Host, RequestTimeEpoch: q.now.UnixMilli(),
			RequestTime: q.now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			Identity:    events.APIGatewayRequestIdentity{SourceIP: q.sourceIP(), UserAgent: q.r.UserAgent()},
		},
		Body: q.body.text, IsBase64Encoded: q.body.base64,
	}
	if q.claims != nil {
		claims := make(map[string]any, len(q.claims.Claims))
		for k, v := range q.claims.Claims {
			claims[k] = v
		}
		ev.RequestContext.Authorizer = map[string]any{"jwt": map[string]any{"claims": claims, "scopes": q.claims.Scopes}}
		if q.route.REST {
			ev.RequestContext.Authorizer = map[string]any{"claims": claims}
		}
	}
	return ev
}

// reply is a function's answer as the front writes it.
type reply struct {
	status  int
	headers map[string][]string
	cookies []string
	body    []byte
}

func gatewayReply(status int, message string) reply {
	return reply{status: status, headers: map[string][]string{"Content-Type": {"application/json"}},
		body: []byte(`{"message":"` + message + `"}`)}
}

// FunctionError is the error for an invocation that returned no response
// the API can use: the function returned an error, crashed, timed out or
// failed to initialise.
type FunctionError struct {
	Status int    // the emulator's HTTP status
	Body   string // what it answered, cut to 500 bytes
}

func (e *FunctionError) Error() string {
	return "samlocal: function error: emulator answered " + http.StatusText(e.Status) + ": " + e.Body
}

// proxyResponse is both formats' response: payload 1.0's multiValueHeaders
// and 2.0's cookies.
type proxyResponse struct {
	StatusCode        *int                `json:"statusCode"`
	Headers           map[string]string   `json:"headers"`
	MultiValueHeaders map[string][]string `json:"multiValueHeaders"`
	Cookies           []string            `json:"cookies"`
	Body              string              `json:"body"`
	IsBase64Encoded   bool                `json:"isBase64Encoded"`
}

// Response maps what the emulator answered for an invocation to the
// response API Gateway makes of it in payload format version (1.0 or
// 2.0): a JSON object with a statusCode is the response; one with
// errorType or errorMessage, a non-200 status, or anything that is not
// JSON (the emulator's "Task timed out") is a *FunctionError; under 2.0,
// other JSON is the body of a 200 (simple responses), under 1.0 an error.
func Response(version string, status int, out []byte) (reply, error) {
	fnErr := &FunctionError{Status: status, Body: string(out[:min(len(out), 500)])}
	if status != http.StatusOK || !json.Valid(out) {
		return reply{}, fnErr
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(out, &probe) != nil || probe["statusCode"] == nil {
		return simpleReply(version, probe, out, fnErr)
	}
	return proxyReply(version, out, fnErr)
}

// simpleReply is what API Gateway makes of JSON out without a statusCode
// (probe: its members when it is an object): fnErr when it has an
// errorType or errorMessage or under payload 1.0, else a 200 whose body
// is out (payload 2.0's simple response).
func simpleReply(version string, probe map[string]json.RawMessage, out []byte, fnErr *FunctionError) (reply, error) {
	_, e1 := probe["errorType"]
	_, e2 := probe["errorMessage"]
	if e1 || e2 || version == "1.0" {
		return reply{}, fnErr
	}
	return reply{status: 200, headers: map[string][]string{"Content-Type": {"application/json"}}, body: out}, nil
}

// proxyReply is what API Gateway makes of out, a JSON object with a
// statusCode: its status, headers, cookies and body (base64-decoded when
// isBase64Encoded), or fnErr when a member is malformed.
func proxyReply(version string, out []byte, fnErr *FunctionError) (reply, error) {
	var pr proxyResponse
	if err := json.Unmarshal(out, &pr); err != nil || pr.StatusCode == nil || *pr.StatusCode < 100 || *pr.StatusCode > 999 {
		return reply{}, fnErr
	}
	rp := reply{status: *pr.StatusCode, headers: pr.header(version), cookies: pr.Cookies, body: []byte(pr.Body)}
	if pr.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(pr.Body)
		if err != nil {
			return reply{}, fnErr
		}
		rp.body = b
	}
	return rp, nil
}

// header is the response's headers, with its multiValueHeaders under
// payload 1.0, where a single header replaces the values of its name.
func (pr *proxyResponse) header(version string) map[string][]string {
	h := map[string][]string{}
	if version == "1.0" {
		for k, vs := range pr.MultiValueHeaders {
			h[k] = append(h[k], vs...)
		}
	}
	for k, v := range pr.Headers {
		h[k] = []string{v}
	}
	return h
}

func (rp reply) write(w http.ResponseWriter) {
	h := w.Header()
	for _, k := range slices.Sorted(maps.Keys(rp.headers)) {
		for _, v := range rp.headers[k] {
			h.Add(k, v)
		}
	}
	for _, c := range rp.cookies {
		h.Add("Set-Cookie", c)
	}
	h.Set("Content-Length", strconv.Itoa(len(rp.body)))
	w.WriteHeader(rp.status)
	_, _ = w.Write(rp.body)
}
