package apigw_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/eventlog"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/apigw"
	"github.com/idemkit/idemkit/observe"
)

func TestMain(m *testing.M) { dynalite.Main(m) }

// TestMisconfiguredStoreIsLogged: a guard whose table does not exist answers
// 503, and without an Observer the first request already logs why through
// slog.Default (DynamoDB's error). With an Observer, the
// observer is told and slog.Default stays quiet.
func TestMisconfiguredStoreIsLogged(t *testing.T) {
	table := "idemkit-no-such-table-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	store, err := dynamo.New(dynalite.Client(t), table, dynamo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		observed bool
	}{
		{"no observer", false},
		{"observer", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := captureDefaultLog(t)
			var seen eventlog.Log
			cfg := idemkit.Config{Store: store}
			if tc.observed {
				cfg.Observer = &seen
			}
			g := testguard.New(t, cfg)
			ran := false
			h := apigw.WrapV2(g, jwt, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
				ran = true
				return events.APIGatewayV2HTTPResponse{StatusCode: 201}, nil
			})
			resp := testkit.Call(t, h, withKey(withTenant(testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-jwt.json"), "alice"), "k-1"))
			if resp.StatusCode != 503 || ran {
				t.Fatalf("status %d, handler ran %v; want 503 and not run", resp.StatusCode, ran)
			}

			out := logs.String()
			if !tc.observed {
				for _, want := range []string{"level=ERROR", "idemkit: store failure", "ResourceNotFoundException", `operation="POST /orders"`} {
					if !strings.Contains(out, want) {
						t.Errorf("log lacks %q:\n%s", want, out)
					}
				}
				return
			}
			if out != "" {
				t.Errorf("slog.Default logged with an Observer set:\n%s", out)
			}
			evs := seen.Events()
			if len(evs) != 1 || evs[0].Kind != observe.EventStoreError {
				t.Errorf("observer got %+v, want one %s", evs, observe.EventStoreError)
			}
		})
	}
}
