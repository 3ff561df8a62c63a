// Command bare is the cold-start baseline: the shared handler, unwrapped.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/idemkit/idemkit/lab/bench/coldstart"
)

func main() { lambda.Start(coldstart.Handler) }
