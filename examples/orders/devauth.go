package orders

import (
	"context"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"
)

// DevIssuer is the iss claim DevAuthorizer sets.
const DevIssuer = "idemkit-orders-dev"

// DevAuthorizer stands in for API Gateway's JWT authorizer where none runs
// (make run; sam local start-api, which does not emulate JWT authorizers).
// It verifies nothing: "Authorization: Bearer <token>" becomes the claim
// sub = <token> in requestContext.authorizer.jwt, so the token names the
// caller (the tenant). A request without a bearer token gets a 401 problem
// before h runs, as API Gateway refuses it before invoking the function:
// a 401 never reaches idemkit and is never stored. Never deploy it: behind
// API Gateway the real authorizer sets the claims.
func DevAuthorizer(h HandlerFunc) HandlerFunc {
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		token, ok := bearer(header(ev.Headers, "Authorization"))
		if !ok {
			resp := (&Problem{Type: TypeUnauthorized, Title: "Unauthorized", Status: 401,
				Detail: "Send an Authorization: Bearer header; locally the token is your caller identity (the JWT sub claim), e.g. Bearer alice."}).Response()
			resp.Headers["WWW-Authenticate"] = `Bearer realm="orders"`
			resp.Headers["Cache-Control"] = "no-store"
			rid := ev.RequestContext.RequestID
			if rid == "" {
				rid = uuid.NewString()
			}
			resp.Headers[RequestIDHeader] = rid
			return resp, nil
		}
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{
				Claims: map[string]string{"sub": token, "iss": DevIssuer},
				Scopes: []string{},
			},
		}
		return h(ctx, ev)
	}
}

// bearer returns the token of an "Authorization: Bearer <token>" value.
func bearer(v string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	if token == "" || len(token) > 256 {
		return "", false
	}
	for i := 0; i < len(token); i++ {
		if token[i] <= ' ' || token[i] >= 0x7f {
			return "", false
		}
	}
	return token, true
}
