// Command api is the ledger's transfers function: POST
// /v1/accounts/{account}/transfers records a transfer once per
// Idempotency-Key (tenant: the token's sub), GET /v1/health answers
// without a token.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/idemkit/idemkit/lambda/apigw"
	"github.com/idemkit/idemkit/samlocal/internal/ledger/boot"
)

type transfer struct {
	ID          string `json:"id"`
	Account     string `json:"account"`
	To          string `json:"to"`
	AmountCents int64  `json:"amount_cents"`
	// DelayMS makes the handler slow, for a test's concurrent duplicates.
	DelayMS int `json:"delay_ms,omitempty"`
}

func main() {
	l := boot.Start(context.Background())
	if os.Getenv("LEDGER_TABLE_ARN") == "" {
		log.Fatal("LEDGER_TABLE_ARN is not set: the template's GetAtt did not reach the function")
	}
	h := func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		if ev.RouteKey == "GET /v1/health" {
			return respond(200, map[string]string{"status": "ok"}), nil
		}
		var t transfer
		if err := json.Unmarshal([]byte(ev.Body), &t); err != nil || t.To == "" || t.AmountCents <= 0 {
			return respond(400, map[string]string{"error": "want {\"to\": account, \"amount_cents\": > 0}"}), nil
		}
		if t.DelayMS > 0 {
			select {
			case <-time.After(time.Duration(t.DelayMS) * time.Millisecond):
			case <-ctx.Done():
				return events.APIGatewayV2HTTPResponse{}, ctx.Err()
			}
		}
		t.ID, t.Account = uuid.NewString(), ev.PathParameters["account"]
		err := l.Put(ctx, map[string]types.AttributeValue{
			"id":      &types.AttributeValueMemberS{Value: t.ID},
			"account": &types.AttributeValueMemberS{Value: t.Account},
			"tenant":  &types.AttributeValueMemberS{Value: ev.RequestContext.Authorizer.JWT.Claims["sub"]},
			"amount":  &types.AttributeValueMemberN{Value: fmt.Sprint(t.AmountCents)},
		})
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		t.DelayMS = 0
		resp := respond(201, t)
		resp.Headers["Location"] = "/v1/accounts/" + t.Account + "/transfers/" + t.ID
		return resp, nil
	}
	lambda.Start(apigw.WrapV2(l.Guard, apigw.Config{Tenant: apigw.JWTClaim("sub")}, h))
}

func respond(status int, v any) events.APIGatewayV2HTTPResponse {
	b, _ := json.Marshal(v)
	return events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: map[string]string{"Content-Type": "application/json"}, Body: string(b)}
}
