package apigw

import (
	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpproblem"
	"github.com/idemkit/idemkit/internal/adapter"
)

// payload2Response points at the fields of a payload format 2.0 response
// (an HTTP API's, a function URL's): the two shapes share them, single
// headers only, and differ in nothing the guard reads or writes.
type payload2Response struct {
	status  *int
	headers *map[string]string
	body    *string
	base64  *bool
}

// httpAPIResponse and urlResponse are the payload2Response of each shape.
func httpAPIResponse(r *events.APIGatewayV2HTTPResponse) payload2Response {
	return payload2Response{&r.StatusCode, &r.Headers, &r.Body, &r.IsBase64Encoded}
}

func urlResponse(r *events.LambdaFunctionURLResponse) payload2Response {
	return payload2Response{&r.StatusCode, &r.Headers, &r.Body, &r.IsBase64Encoded}
}

// payload2Responder returns how a payload format 2.0 response R is
// stored, replayed and answered with, fields pointing at its fields.
// Payload format 2.0 responses have no multiValueHeaders: API Gateway
// never delivers them, so they are neither stored nor replayed. Cookies
// are never stored or replayed.
func payload2Responder[R any](a *adapter.Adapter, fields func(*R) payload2Response) adapter.Responder[R] {
	return adapter.Responder[R]{
		Snapshot: func(r R) *idemkit.Snapshot {
			f := fields(&r)
			return a.LambdaSnapshot(*f.status, *f.headers, nil, *f.body, *f.base64)
		},
		Replay: func(s *idemkit.Snapshot) R {
			var r R
			f := fields(&r)
			hdr := adapter.Single(s.Header, 1)
			hdr[adapter.ReplayedHeader] = "true"
			*f.status, *f.headers = s.Status, hdr
			*f.body, *f.base64 = adapter.LambdaBody(s)
			return r
		},
		Fresh: func(r R) R {
			f := fields(&r)
			*f.headers = adapter.WithoutReplayed(*f.headers)
			return r
		},
		Respond: func(p httpproblem.Response) R {
			var r R
			f := fields(&r)
			*f.status, *f.headers = p.Status, adapter.Single(p.Header, 0)
			*f.body, *f.base64 = adapter.ResponseBody(p.Body)
			return r
		},
	}
}

// payload2Request returns what a payload format 2.0 request (an HTTP
// API's, a function URL's) gives the guard, its path, template, tenant and
// shape aside, which differ between the two.
func payload2Request(a *adapter.Adapter, method string, headers map[string]string, body string, base64 bool, rawQuery string) adapter.Request {
	return adapter.Request{
		Method:      method,
		Key:         adapter.Values(headers, nil, a.Header()),
		ContentType: adapter.First(headers, nil, "Content-Type"),
		BodyString:  body,
		Base64:      base64,
		RawQuery:    rawQuery,
		Header:      multi(headers),
	}
}
