// Command memory is the shared handler wrapped by lambda/apigw over the
// in-memory store: the kit's cost without the AWS SDK.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/lab/bench/coldstart"
	"github.com/idemkit/idemkit/lambda/apigw"
	"github.com/idemkit/idemkit/memstore"
)

func main() {
	g, err := idemkit.New(idemkit.Config{Store: memstore.New()})
	if err != nil {
		panic(err)
	}
	lambda.Start(apigw.WrapV2(g, apigw.Config{Tenant: apigw.SingleTenant("bench")}, coldstart.Handler))
}
