package samlocal_test

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit/samlocal"
)

func plan(t *testing.T, path string, cfg samlocal.PlanConfig) *samlocal.Plan {
	t.Helper()
	tpl, err := samlocal.ReadTemplate(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := samlocal.NewPlan(tpl, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func routes(fn *samlocal.Function) []string {
	var s []string
	for _, r := range fn.Routes {
		s = append(s, r.RouteKey()+" "+r.Payload+" "+r.Authorizer)
	}
	return s
}

// TestPlanOrders: the repository's template resolves to its routes, its
// authorizer (issuer without a default: the local stand-in), its tables
// and each function's environment, the tables' Refs their local names.
func TestPlanOrders(t *testing.T) {
	p := plan(t, filepath.Join(samlocal.RepoRoot(), "template.yaml"), samlocal.PlanConfig{StackName: "dev"})
	api := p.Function("OrdersFunction")
	if api == nil || p.Function("ShippingFunction") == nil {
		t.Fatalf("functions %v", p.Functions)
	}
	want := []string{"POST /orders 2.0 OrdersApi/JwtAuthorizer", "GET /orders/{id} 2.0 OrdersApi/JwtAuthorizer", "POST /payments 2.0 OrdersApi/JwtAuthorizer"}
	if got := routes(api); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Errorf("routes %v, want %v", got, want)
	}
	if a := p.Authorizers["OrdersApi/JwtAuthorizer"]; a == nil || a.Issuer != samlocal.DefaultIssuer {
		t.Errorf("authorizer %+v: JwtIssuer has no default, want %s", a, samlocal.DefaultIssuer)
	}
	env := api.Env
	if env["IDEMKIT_TABLE"] != "dev-IdempotencyTable" || env["ORDERS_TABLE"] != "dev-OrdersTable" ||
		env["IDEMKIT_REPLAY_HOURS"] != "24" || env["SHIPPING_QUEUE_URL"] != "" || env["IDEMKIT_STORE"] != "dynamodb" {
		t.Errorf("environment %v", env)
	}
	if api.Timeout != 29 || api.MemorySize != 256 || api.BuildMethod != "makefile" || !strings.HasSuffix(api.CodeDir, "examples/orders/cmd/lambda") {
		t.Errorf("function %+v", api)
	}
	if typ := p.Function("ShippingFunction").Events["ShipRequests"]; typ != "SQS" {
		t.Errorf("shipping events %v", p.Function("ShippingFunction").Events)
	}
	var names []string
	for _, tb := range p.Tables {
		names = append(names, *tb.Input.TableName)
		if *tb.Input.TableName == "dev-IdempotencyTable" && (len(tb.Input.GlobalSecondaryIndexes) != 2 || tb.TTL != "exp") {
			t.Errorf("idempotency table %+v, TTL %q", tb.Input, tb.TTL)
		}
	}
	if !slices.Equal(names, []string{"dev-IdempotencyTable", "dev-OrdersTable"}) {
		t.Errorf("tables %v", names)
	}
	over := plan(t, filepath.Join(samlocal.RepoRoot(), "template.yaml"), samlocal.PlanConfig{
		Parameters: map[string]string{"JwtIssuer": "https://idp.example", "JwtAudience": "a,b", "ReplayWindowHours": "2"}})
	if a := over.Authorizers["OrdersApi/JwtAuthorizer"]; a.Issuer != "https://idp.example" || !slices.Equal(a.Audience, []string{"a", "b"}) {
		t.Errorf("overridden authorizer %+v", a)
	}
	if over.Function("OrdersFunction").Env["IDEMKIT_REPLAY_HOURS"] != "2" {
		t.Error("a parameter override does not reach the environment")
	}
}

// TestPlanLedger: Globals, the implicit HTTP API, an open route, GetAtt,
// Fn::Sub, Fn::Join and a SimpleTable.
func TestPlanLedger(t *testing.T) {
	p := plan(t, filepath.Join(samlocal.ModuleDir(), "internal", "ledger", "template.yaml"), samlocal.PlanConfig{StackName: "s1", Region: "eu-west-1"})
	api := p.Function("TransfersFunction")
	want := []string{"GET /v1/health 2.0 ", "POST /v1/accounts/{account}/transfers 2.0 ServerlessHttpApi/Jwt"}
	if got := routes(api); !slices.Equal(got, want) {
		t.Errorf("routes %v, want %v", got, want)
	}
	if a := p.Authorizers["ServerlessHttpApi/Jwt"]; a == nil || a.Issuer != "https://auth.ledger.test/" || !slices.Equal(a.Audience, []string{"ledger-api", "ledger-admin"}) {
		t.Errorf("authorizer %+v", a)
	}
	if e := api.Env; e["IDEM_TABLE"] != "s1-idempotency" || e["LEDGER_TABLE"] != "s1-ledger" ||
		e["LEDGER_TABLE_ARN"] != "arn:aws:dynamodb:eu-west-1:123456789012:table/s1-ledger" || e["SETTLEMENT_QUEUE"] != "" {
		t.Errorf("environment %v", e)
	}
	w := p.Function("SettlementWorker")
	if w.Timeout != 30 || api.Timeout != 20 || w.Env["LEDGER_TABLE"] != "s1-ledger" || len(w.Routes) != 0 || w.Events["Settlements"] != "SQS" {
		t.Errorf("worker %+v", w)
	}
}

// TestPlanRefuses: what cannot run locally is refused with the reason.
func TestPlanRefuses(t *testing.T) {
	const head = "Resources:\n  Fn:\n    Type: AWS::Serverless::Function\n    Properties:\n      CodeUri: fn/\n      Runtime: provided.al2023\n"
	for _, tc := range []struct {
		name, template, want string
		cfg                  samlocal.PlanConfig
	}{
		{"no resources", "Parameters: {}\n", "no Resources", samlocal.PlanConfig{}},
		{"no function", "Resources:\n  T:\n    Type: AWS::Serverless::SimpleTable\n", "no AWS::Serverless::Function", samlocal.PlanConfig{}},
		{"parameter without a value", "Parameters:\n  P:\n    Type: String\n" + head + "      Environment:\n        Variables:\n          X: !Ref P\n",
			"-parameter-overrides P=", samlocal.PlanConfig{}},
		{"unknown override", head, "no such parameter", samlocal.PlanConfig{Parameters: map[string]string{"Nope": "1"}}},
		{"IAM authorizer", head + "      Events:\n        E:\n          Type: HttpApi\n          Properties:\n            Path: /x\n            Method: POST\n            Auth:\n              Authorizer: AWS_IAM\n",
			"IAM (AWS_IAM)", samlocal.PlanConfig{}},
		{"Lambda authorizer", head + "      Events:\n        E:\n          Type: Api\n          Properties:\n            Path: /x\n            Method: POST\n            RestApiId: !Ref A\n  A:\n    Type: AWS::Serverless::Api\n    Properties:\n      Auth:\n        DefaultAuthorizer: L\n        Authorizers:\n          L:\n            FunctionArn: arn\n",
			"a Lambda authorizer (L)", samlocal.PlanConfig{}},
		{"API key", head + "      Events:\n        E:\n          Type: Api\n          Properties:\n            Path: /x\n            Method: POST\n            Auth:\n              ApiKeyRequired: true\n",
			"API key", samlocal.PlanConfig{}},
		{"ImportValue", head + "      Environment:\n        Variables:\n          X: !ImportValue other\n", "Fn::ImportValue is not supported", samlocal.PlanConfig{}},
		{"bad payload version", head + "      Events:\n        E:\n          Type: HttpApi\n          Properties:\n            Path: /x\n            Method: POST\n            PayloadFormatVersion: \"3.0\"\n",
			"PayloadFormatVersion", samlocal.PlanConfig{}},
		{"Api event without a Path", head + "      Events: {E: {Type: Api, Properties: {Method: POST}}}\n", "an Api event needs a Path", samlocal.PlanConfig{}},
		{"unknown ApiId", head + "      Events: {E: {Type: HttpApi, Properties: {ApiId: !Ref Nope}}}\n", "ApiId Nope: no such resource", samlocal.PlanConfig{}},
		{"authorizer not defined", head + "      Events: {E: {Type: HttpApi, Properties: {Auth: {Authorizer: J}}}}\n",
			"authorizer J is not among ServerlessHttpApi's Authorizers", samlocal.PlanConfig{}},
		{"Cognito authorizer", head + "      Events: {E: {Type: Api, Properties: {Path: /x, RestApiId: !Ref A}}}\n" +
			"  A: {Type: AWS::Serverless::Api, Properties: {Auth: {DefaultAuthorizer: C, Authorizers: {C: {UserPoolArn: arn}}}}}\n",
			"a Cognito user pool authorizer (C)", samlocal.PlanConfig{}},
		{"API key of every Api", "Globals: {Api: {Auth: {ApiKeyRequired: true}}}\n" + head + "      Events: {E: {Type: Api, Properties: {Path: /x}}}\n",
			"API key", samlocal.PlanConfig{}},
		{"Timeout not a positive integer", head + "      Timeout: 0\n", "property Timeout", samlocal.PlanConfig{}},
		{"MemorySize not an integer", head + "      MemorySize: lots\n", "property MemorySize", samlocal.PlanConfig{}},
		{"IgnoreGlobals a name, not a list", head + "    IgnoreGlobals: Timeout\n", "resource Fn: IgnoreGlobals Timeout: want '*' or a list", samlocal.PlanConfig{}},
		{"IgnoreGlobals an intrinsic", head + "    IgnoreGlobals: !If [C, '*', [Timeout]]\n", "resource Fn: IgnoreGlobals map[Fn::If:", samlocal.PlanConfig{}},
		{"IgnoreGlobals a list of more than names", head + "    IgnoreGlobals: [Timeout, [Runtime]]\n", "resource Fn: IgnoreGlobals [Timeout [Runtime]]", samlocal.PlanConfig{}},
		{"IgnoreGlobals without a value", head + "    IgnoreGlobals:\n", "resource Fn: IgnoreGlobals <nil>", samlocal.PlanConfig{}},
		{"IgnoreGlobals of an API a name", head + "      Events: {E: {Type: HttpApi, Properties: {ApiId: !Ref A}}}\n  A: {Type: AWS::Serverless::HttpApi, IgnoreGlobals: Auth}\n",
			"resource A: IgnoreGlobals Auth: want", samlocal.PlanConfig{}},
		{"an API that ignores the Globals' Auth has not their Authorizers", "Globals: {HttpApi: {Auth: {Authorizers: {J: {JwtConfiguration: {issuer: i}}}}}}\n" + head +
			"      Events: {E: {Type: HttpApi, Properties: {ApiId: !Ref A, Auth: {Authorizer: J}}}}\n" +
			"  A: {Type: AWS::Serverless::HttpApi, IgnoreGlobals: [Auth], Properties: {Auth: {Authorizers: {K: {JwtConfiguration: {issuer: k}}}}}}\n",
			"authorizer J is not among A's Authorizers", samlocal.PlanConfig{}},
		{"IgnoreGlobals names what Globals.Function lacks", "Globals: {Function: {Timeout: 9}}\n" + head + "    IgnoreGlobals: [Timeout, Tracing]\n",
			"IgnoreGlobals names Tracing, which Globals.Function does not have", samlocal.PlanConfig{}},
		{"IgnoreGlobals names what Globals.HttpApi lacks", "Globals: {HttpApi: {FailOnWarnings: true}}\n" + head +
			"      Events: {E: {Type: HttpApi, Properties: {ApiId: !Ref A}}}\n  A: {Type: AWS::Serverless::HttpApi, IgnoreGlobals: [Cors]}\n",
			"ApiId A: samlocal: template: IgnoreGlobals names Cors, which Globals.HttpApi does not have", samlocal.PlanConfig{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tpl, err := samlocal.ParseTemplate([]byte(tc.template))
			if err == nil {
				_, err = samlocal.NewPlan(tpl, tc.cfg)
			}
			if err == nil || !errors.Is(err, samlocal.ErrTemplate) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrTemplate saying %q", err, tc.want)
			}
		})
	}
	// -skip-unsupported-auth serves the IAM route open.
	tpl, err := samlocal.ParseTemplate([]byte(head + "      Events:\n        E:\n          Type: HttpApi\n          Properties:\n            Path: /x\n            Method: POST\n            Auth:\n              Authorizer: AWS_IAM\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := samlocal.NewPlan(tpl, samlocal.PlanConfig{SkipUnsupportedAuth: true})
	if err != nil || len(p.Functions[0].Routes) != 1 || p.Functions[0].Routes[0].Authorizer != "" {
		t.Fatalf("skipped: %v %+v", err, p)
	}
}

// TestPlanRoutes: an event's method, path, payload format, API and JWT
// authorizer, each as API Gateway takes them, the authorizer's issuer and
// audience standing in when the template's do not resolve.
func TestPlanRoutes(t *testing.T) {
	const jwt = "Globals:\n  HttpApi:\n    Auth:\n      DefaultAuthorizer: J\n      Authorizers:\n        J:\n          JwtConfiguration: "
	const get = "{Path: /p, Method: GET"
	for _, tc := range []struct {
		name, top, events, resources string
		want                         string // route key, payload, authorizer, its issuer and audience
	}{
		{"no method or path", "", "{Type: HttpApi}", "", "$default 2.0 "},
		{"any method", "", "{Type: HttpApi, Properties: {Path: /p, Method: x-amazon-apigateway-any-method}}", "", "ANY /p 2.0 "},
		{"method in lower case", "", "{Type: HttpApi, Properties: {Path: /p, Method: get}}", "", "GET /p 2.0 "},
		{"HTTP API payload 1.0", "", "{Type: HttpApi, Properties: " + get + ", PayloadFormatVersion: \"1.0\"}}", "", "GET /p 1.0 "},
		{"REST API payload 1.0 only", "", "{Type: Api, Properties: " + get + ", PayloadFormatVersion: \"2.0\"}}", "", "GET /p 1.0 "},
		{"default authorizer of Globals, one audience", jwt + "{issuer: https://idp.test, audience: one}\n",
			"{Type: HttpApi, Properties: " + get + "}}", "", "GET /p 2.0 ServerlessHttpApi/J https://idp.test [one]"},
		{"issuer and audience stand-ins", "Parameters:\n  Aud: {Type: String}\n" + jwt + "{issuer: \"\", audience: !Ref Aud}\n",
			"{Type: HttpApi, Properties: " + get + "}}", "", "GET /p 2.0 ServerlessHttpApi/J " + samlocal.DefaultIssuer + " [" + samlocal.DefaultAudience + "]"},
		{"NONE opens a route", jwt + "{issuer: i, audience: a}\n", "{Type: HttpApi, Properties: " + get + ", Auth: {Authorizer: NONE}}}", "", "GET /p 2.0 "},
		{"an API of its own over Globals", jwt + "{issuer: i, audience: a}\n", "{Type: HttpApi, Properties: " + get + ", ApiId: !Ref A}}",
			"  A:\n    Type: AWS::Serverless::HttpApi\n    Properties: {Auth: {DefaultAuthorizer: J, Authorizers: {J: {JwtConfiguration: {issuer: i2, audience: [x, \"\", y]}}}}}\n",
			"GET /p 2.0 A/J i2 [x y]"},
		{"default authorizer of Globals, an API's own Authorizers", "Globals: {HttpApi: {Auth: {DefaultAuthorizer: J}}}\n",
			"{Type: HttpApi, Properties: " + get + ", ApiId: !Ref A}}",
			"  A: {Type: AWS::Serverless::HttpApi, Properties: {Auth: {Authorizers: {J: {JwtConfiguration: {issuer: i2, audience: x}}}}}}\n",
			"GET /p 2.0 A/J i2 [x]"},
		{"Authorizers of Globals and of the API, merged", jwt + "{issuer: i, audience: a}\n",
			"{Type: HttpApi, Properties: " + get + ", ApiId: !Ref A}}",
			"  A: {Type: AWS::Serverless::HttpApi, Properties: {Auth: {Authorizers: {K: {JwtConfiguration: {issuer: i2, audience: x}}}}}}\n",
			"GET /p 2.0 A/J i [a]"},
		{"an event's authorizer among the API's, Globals' default", jwt + "{issuer: i, audience: a}\n",
			"{Type: HttpApi, Properties: " + get + ", ApiId: !Ref A, Auth: {Authorizer: K}}}",
			"  A: {Type: AWS::Serverless::HttpApi, Properties: {Auth: {Authorizers: {K: {JwtConfiguration: {issuer: i2, audience: x}}}}}}\n",
			"GET /p 2.0 A/K i2 [x]"},
		{"an API that ignores the Globals' Auth, open", jwt + "{issuer: i, audience: a}\n",
			"{Type: HttpApi, Properties: " + get + ", ApiId: !Ref A}}", "  A: {Type: AWS::Serverless::HttpApi, IgnoreGlobals: [Auth]}\n", "GET /p 2.0 "},
		{"an API that ignores every Globals property, open", jwt + "{issuer: i, audience: a}\n",
			"{Type: HttpApi, Properties: " + get + ", ApiId: !Ref A}}", "  A: {Type: AWS::Serverless::HttpApi, IgnoreGlobals: '*'}\n", "GET /p 2.0 "},
		{"an API that ignores another Globals property keeps the Globals' Auth", jwt + "{issuer: i, audience: a}\n    FailOnWarnings: true\n",
			"{Type: HttpApi, Properties: " + get + ", ApiId: !Ref A}}", "  A: {Type: AWS::Serverless::HttpApi, IgnoreGlobals: [FailOnWarnings]}\n", "GET /p 2.0 A/J i [a]"},
		{"the implicit API keeps the Globals' Auth", jwt + "{issuer: i, audience: a}\n",
			"{Type: HttpApi, Properties: " + get + "}}", "  A: {Type: AWS::Serverless::HttpApi, IgnoreGlobals: '*'}\n", "GET /p 2.0 ServerlessHttpApi/J i [a]"},
		{"a REST API that ignores the Globals' Auth, open", "Globals: {Api: {Auth: {ApiKeyRequired: true}}}\n",
			"{Type: Api, Properties: " + get + ", RestApiId: !Ref A}}", "  A: {Type: AWS::Serverless::Api, IgnoreGlobals: [Auth]}\n", "GET /p 1.0 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := newPlan(tc.top+"Resources:\n  Fn:\n    Type: AWS::Serverless::Function\n    Properties: {CodeUri: fn/, Runtime: provided.al2023, Events: {E: "+tc.events+"}}\n"+tc.resources, samlocal.PlanConfig{})
			if err != nil {
				t.Fatal(err)
			}
			got := routes(p.Function("Fn"))
			if a := p.Authorizers[p.Function("Fn").Routes[0].Authorizer]; a != nil {
				got[0] += fmt.Sprintf(" %s %v", a.Issuer, a.Audience)
			}
			if len(got) != 1 || got[0] != tc.want {
				t.Fatalf("routes %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPlanIgnoreGlobals: a function's IgnoreGlobals keeps from it every
// property of Globals.Function ('*') or those it lists, and from it only:
// the function without one still gets them all. A list is checked against
// Globals.Function only when the template has one, as SAM checks it.
func TestPlanIgnoreGlobals(t *testing.T) {
	const globals = "Globals:\n  Function:\n    Runtime: go1.x\n    Timeout: 9\n    MemorySize: 512\n    Environment: {Variables: {A: g, B: g}}\n"
	const all = "9 512 go1.x map[A:g B:g]"
	for _, tc := range []struct {
		name, globals, ignore string
		want                  string // the function's timeout, memory, runtime and environment
	}{
		{"none ignored", globals, "", "9 512 go1.x map[A:g B:own]"},
		{"every property", globals, "    IgnoreGlobals: '*'\n", "3 128  map[B:own]"},
		{"every property, long form", globals, "    IgnoreGlobals: \"*\"\n", "3 128  map[B:own]"},
		{"the properties listed", globals, "    IgnoreGlobals: [Timeout, Environment]\n", "3 512 go1.x map[B:own]"},
		{"one property, a block list", globals, "    IgnoreGlobals:\n      - Runtime\n", "9 512  map[A:g B:own]"},
		{"an empty list", globals, "    IgnoreGlobals: []\n", "9 512 go1.x map[A:g B:own]"},
		{"no Globals.Function: a list not checked", "Globals: {HttpApi: {FailOnWarnings: true}}\n", "    IgnoreGlobals: [Tracing]\n", "3 128  map[B:own]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := newPlan(tc.globals+"Resources:\n  Fn:\n    Type: AWS::Serverless::Function\n"+tc.ignore+
				"    Properties: {CodeUri: fn/, Environment: {Variables: {B: own}}}\n  Other:\n    Type: AWS::Serverless::Function\n    Properties: {CodeUri: fn/}\n",
				samlocal.PlanConfig{})
			if err != nil {
				t.Fatal(err)
			}
			fn := p.Function("Fn")
			if got := fmt.Sprintf("%d %d %s %v", fn.Timeout, fn.MemorySize, fn.Runtime, fn.Env); got != tc.want {
				t.Errorf("function %q, want %q", got, tc.want)
			}
			other := p.Function("Other")
			if got := fmt.Sprintf("%d %d %s %v", other.Timeout, other.MemorySize, other.Runtime, other.Env); tc.globals == globals && got != all {
				t.Errorf("the other function %q, want %q", got, all)
			}
		})
	}
}

// TestGlobalsAuthorizerAtTheFront: the DefaultAuthorizer of Globals
// guards the routes of an API that has Authorizers of its own, as it does
// deployed: 401 without a token, the authorizer passed with one (429 past
// it: no sandbox runs here). A route that opts out stays open.
func TestGlobalsAuthorizerAtTheFront(t *testing.T) {
	const api = "  A: {Type: AWS::Serverless::HttpApi, Properties: {Auth: {Authorizers: {J: {JwtConfiguration: {issuer: i2, audience: x}}}}}}\n"
	const byDefault = "Globals: {HttpApi: {Auth: {DefaultAuthorizer: J}}}\n"
	for _, tc := range []struct {
		name, globals, event string
		guarded              bool
	}{
		{"default authorizer of Globals", byDefault, "{Path: /p, Method: GET, ApiId: !Ref A}", true},
		{"the route's authorizer", "", "{Path: /p, Method: GET, ApiId: !Ref A, Auth: {Authorizer: J}}", true},
		{"the route opts out of Globals' default", byDefault, "{Path: /p, Method: GET, ApiId: !Ref A, Auth: {Authorizer: NONE}}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := newPlan(tc.globals+"Resources:\n  Fn:\n    Type: AWS::Serverless::Function\n    Properties: {CodeUri: fn/, Runtime: provided.al2023, Events: {E: {Type: HttpApi, Properties: "+tc.event+"}}}\n"+api, samlocal.PlanConfig{})
			if err != nil {
				t.Fatal(err)
			}
			fn := p.Function("Fn")
			front := &samlocal.Front{Routes: fn.Routes, Pools: map[string]*samlocal.Pool{"Fn": {Function: fn}}, Authorizers: map[string]*samlocal.Authorizer{}}
			token := ""
			for key, jc := range p.Authorizers {
				is, err := samlocal.NewIssuer(jc.Issuer, jc.Audience[0])
				if err != nil {
					t.Fatal(err)
				}
				front.Authorizers[key], token = is.Authorizer(), is.Token("carol", time.Hour, nil)
			}
			srv := httptest.NewServer(front)
			defer srv.Close()
			open := call(t, "GET", srv.URL+"/p", "", "", "")
			if !tc.guarded {
				wantGateway(t, "no token, open route", open, 429, "Too Many Requests")
				return
			}
			wantGateway(t, "no token", open, 401, "Unauthorized")
			wantGateway(t, "a token", call(t, "GET", srv.URL+"/p", token, "", ""), 429, "Too Many Requests")
		})
	}
}

// TestPlanFunctionSettings: a function's timeout and memory (3 s and 128
// MB when the template has none), its runtime resolved, its code's
// directory relative to the template's unless absolute.
func TestPlanFunctionSettings(t *testing.T) {
	for _, tc := range []struct {
		props string
		want  string // timeout, memory, runtime, code directory
	}{
		{"CodeUri: fn/, Runtime: provided.al2023", "3 128 provided.al2023 /tpl/fn/"},
		{"CodeUri: /abs/fn, Runtime: !Ref R, Timeout: 7, MemorySize: \"512\"", "7 512 go1.x /abs/fn"},
		{"CodeUri: {Bucket: b, Key: k}", "3 128  "},
	} {
		t.Run(tc.props, func(t *testing.T) {
			tpl, err := samlocal.ParseTemplate([]byte("Parameters:\n  R: {Type: String, Default: go1.x}\nResources:\n  Fn:\n    Type: AWS::Serverless::Function\n    Properties: {" + tc.props + "}\n"))
			if err != nil {
				t.Fatal(err)
			}
			tpl.Dir = "/tpl"
			p, err := samlocal.NewPlan(tpl, samlocal.PlanConfig{})
			if err != nil {
				t.Fatal(err)
			}
			fn := p.Function("Fn")
			if got := fmt.Sprint(fn.Timeout, " ", fn.MemorySize, " ", fn.Runtime, " ", fn.CodeDir); got != tc.want {
				t.Fatalf("function %q, want %q", got, tc.want)
			}
		})
	}
}

// TestFunctionEnv: a sandbox gets the template's variables with the
// -env-vars replacements, what Lambda sets, and nothing of this process.
func TestFunctionEnv(t *testing.T) {
	t.Setenv("IDEMKIT_SECRET_OF_THIS_PROCESS", "x")
	fn := &samlocal.Function{Name: "Fn", Timeout: 9, MemorySize: 512, Env: map[string]string{"A": "1", "B": "2"}}
	env := map[string]string{}
	for _, kv := range samlocal.FunctionEnv(fn, "http://127.0.0.1:1", "eu-west-1",
		map[string]map[string]string{"Parameters": {"B": "p"}, "Fn": {"C": "3"}, "Other": {"A": "no"}}) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	for k, v := range map[string]string{"A": "1", "B": "p", "C": "3", "AWS_LAMBDA_FUNCTION_NAME": "Fn", "AWS_LAMBDA_FUNCTION_TIMEOUT": "9",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512", "AWS_REGION": "eu-west-1", "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:1"} {
		if env[k] != v {
			t.Errorf("%s=%q, want %q", k, env[k], v)
		}
	}
	if _, ok := env["IDEMKIT_SECRET_OF_THIS_PROCESS"]; ok {
		t.Error("this process's environment reached the function")
	}
}
