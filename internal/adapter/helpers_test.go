package adapter_test

import "github.com/aws/aws-lambda-go/events"

// v2Post is an HTTP API POST event on routeKey with the raw path, query,
// headers and body given.
func v2Post(routeKey, path, query string, headers map[string]string, body string) events.APIGatewayV2HTTPRequest {
	ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: routeKey, RawPath: path, RawQueryString: query, Headers: headers, Body: body}
	ev.RequestContext.HTTP.Method = "POST"
	return ev
}

// urlPost is a function URL POST event with the raw path, query, headers
// and body given.
func urlPost(path, query string, headers map[string]string, body string) events.LambdaFunctionURLRequest {
	ev := events.LambdaFunctionURLRequest{Version: "2.0", RawPath: path, RawQueryString: query, Headers: headers, Body: body}
	ev.RequestContext.HTTP.Method = "POST"
	return ev
}
