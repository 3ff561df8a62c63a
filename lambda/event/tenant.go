package event

import (
	"context"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/idemkit/idemkit/tenant"
)

// InvocationTenant returns a tenant.Func that names the tenant by the
// invocation's tenant id (lambdacontext.LambdaContext.TenantID), which
// Lambda sets for a function in tenant isolation mode from the invoker's
// tenant-id parameter (X-Amz-Tenant-Id), byte for byte. It works with every
// adapter, whatever R is: idemkit's apigw.Request, an ALB event, an SQS
// message of lambda/batch, the input of Wrap. A function without tenant
// isolation, or a context that is not a Lambda invocation's, has none, and
// the request fails closed.
//
// The id is what the invoker passed: it is as trustworthy as the invoker.
// Behind a REST API, map X-Amz-Tenant-Id from the authorizer's result
// ($context.authorizer.*), not from a header, query or path the client
// chooses, or one caller could replay another's responses.
func InvocationTenant[R any]() tenant.Func[R] {
	return func(ctx context.Context, _ R) (string, error) {
		lc, ok := lambdacontext.FromContext(ctx)
		if !ok {
			return "", nil
		}
		return lc.TenantID, nil
	}
}
