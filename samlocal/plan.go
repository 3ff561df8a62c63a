package samlocal

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Plan is what a template runs locally, every value resolved.
type Plan struct {
	Functions []*Function
	Tables    []*Table
	// Authorizers are the JWT authorizers the routes use, by "API/name".
	Authorizers map[string]*JWTConfig
}

// Function is one AWS::Serverless::Function.
type Function struct {
	Name        string // the logical id, also its local function name
	CodeDir     string // CodeUri, absolute
	Runtime     string
	BuildMethod string // Metadata BuildMethod
	Timeout     int    // seconds
	MemorySize  int
	// Env is the template's environment, resolved: a table's Ref is its
	// local name.
	Env    map[string]string
	Routes []*Route
	// Events are the function's non-HTTP events by name: their Type (SQS,
	// DynamoDB, Kinesis, Schedule, ...). They are invoked with an event
	// file.
	Events map[string]string
}

// Route is one HttpApi or Api event: a method and path of the front.
type Route struct {
	Function string
	// Method is upper case; ANY matches every method.
	Method string
	// Path is the template's path ("/orders/{id}", "/files/{proxy+}"), or
	// "$default".
	Path string
	// Payload is the event format: "2.0" or "1.0".
	Payload string
	// REST: an Api event (REST API), else an HttpApi event.
	REST bool
	// Authorizer is the key of the route's JWT authorizer in
	// Plan.Authorizers; empty: none.
	Authorizer string
}

// RouteKey is the route as API Gateway names it ("POST /orders").
func (r *Route) RouteKey() string {
	if r.Path == "$default" {
		return "$default"
	}
	return r.Method + " " + r.Path
}

// JWTConfig is a JWT authorizer: the issuer and audiences a token must
// carry. Locally the tokens are signed by a key the stack generates.
type JWTConfig struct {
	Issuer   string
	Audience []string
}

// Table is one table the template declares, with its local name.
type Table struct {
	LogicalID string
	Input     *dynamodb.CreateTableInput
	// TTL is the TimeToLiveSpecification's attribute when enabled.
	TTL string
}

// PlanConfig says how to resolve a template.
type PlanConfig struct {
	// Region is AWS::Region. Empty: us-east-1.
	Region string
	// StackName is AWS::StackName, and the prefix of the tables without a
	// TableName. Empty: "local".
	StackName string
	// Parameters override the parameters' defaults.
	Parameters map[string]string
	// SkipUnsupportedAuth serves the routes whose authorizer is not a JWT
	// authorizer (Lambda, IAM, Cognito user pools, API keys) without one,
	// instead of refusing the template.
	SkipUnsupportedAuth bool
}

// DefaultIssuer and DefaultAudience stand for a JWT authorizer's issuer
// and audience when the template's cannot be resolved (a parameter
// without a default).
const (
	DefaultIssuer   = "https://issuer.samlocal.local"
	DefaultAudience = "samlocal"
)

// NewPlan resolves what t runs locally.
func NewPlan(t *Template, cfg PlanConfig) (*Plan, error) {
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.StackName == "" {
		cfg.StackName = "local"
	}
	r, err := newResolver(t, cfg.Parameters, cfg.Region, cfg.StackName)
	if err != nil {
		return nil, err
	}
	p := &Plan{Authorizers: map[string]*JWTConfig{}}
	// Tables first: their names are what Ref gives the functions.
	for _, id := range sortedKeys(t.Resources) {
		res := t.Resources[id]
		var tb *Table
		switch res.Type {
		case "AWS::DynamoDB::Table":
			tb, err = tableOf(r, id, res)
		case "AWS::Serverless::SimpleTable":
			tb, err = simpleTableOf(r, id, res)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", id, err)
		}
		r.names[id] = *tb.Input.TableName
		p.Tables = append(p.Tables, tb)
	}
	globalFn, _ := t.Globals["Function"].(map[string]any)
	for _, id := range sortedKeys(t.Resources) {
		res := t.Resources[id]
		if res.Type != "AWS::Serverless::Function" {
			continue
		}
		fn, err := functionOf(r, t, id, res, globalFn, cfg, p)
		if err != nil {
			return nil, fmt.Errorf("function %s: %w", id, err)
		}
		p.Functions = append(p.Functions, fn)
	}
	if len(p.Functions) == 0 {
		return nil, fmt.Errorf("%w: no AWS::Serverless::Function", ErrTemplate)
	}
	return p, nil
}

// Function returns the function named name, or nil.
func (p *Plan) Function(name string) *Function {
	for _, f := range p.Functions {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// tableProps returns a table resource's properties, evaluated, and its
// name: TableName, else the stack's name and the logical id, as
// CloudFormation names an unnamed table.
func tableProps(r *resolver, id string, res Resource) (map[string]any, string, error) {
	props, err := r.eval(res.Properties)
	if err != nil {
		return nil, "", err
	}
	m, _ := props.(map[string]any)
	name, _ := m["TableName"].(string)
	if name == "" {
		name = r.stack + "-" + id
	}
	return m, name, nil
}

func tableOf(r *resolver, id string, res Resource) (*Table, error) {
	m, name, err := tableProps(r, id, res)
	if err != nil {
		return nil, err
	}
	in := &dynamodb.CreateTableInput{TableName: aws.String(name)}
	for _, f := range []struct {
		key string
		dst any
	}{
		{"AttributeDefinitions", &in.AttributeDefinitions},
		{"KeySchema", &in.KeySchema},
		{"GlobalSecondaryIndexes", &in.GlobalSecondaryIndexes},
		{"LocalSecondaryIndexes", &in.LocalSecondaryIndexes},
		{"ProvisionedThroughput", &in.ProvisionedThroughput},
	} {
		v, ok := m[f.key]
		if !ok {
			continue
		}
		if err := convert(v, f.dst); err != nil {
			return nil, fmt.Errorf("%s: %w", f.key, err)
		}
	}
	if len(in.KeySchema) == 0 {
		return nil, fmt.Errorf("%w: no KeySchema", ErrTemplate)
	}
	in.BillingMode = types.BillingModePayPerRequest
	if bm, _ := m["BillingMode"].(string); bm == string(types.BillingModeProvisioned) || (bm == "" && in.ProvisionedThroughput != nil) {
		in.BillingMode = types.BillingModeProvisioned
	}
	if in.BillingMode == types.BillingModePayPerRequest {
		in.ProvisionedThroughput = nil
		for i := range in.GlobalSecondaryIndexes {
			in.GlobalSecondaryIndexes[i].ProvisionedThroughput = nil
		}
	}
	if ss, ok := m["StreamSpecification"].(map[string]any); ok {
		if vt, _ := ss["StreamViewType"].(string); vt != "" {
			in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewType(vt)}
		}
	}
	tb := &Table{LogicalID: id, Input: in}
	if ttl, ok := m["TimeToLiveSpecification"].(map[string]any); ok && fmt.Sprint(ttl["Enabled"]) == "true" {
		tb.TTL, _ = ttl["AttributeName"].(string)
	}
	return tb, nil
}

func simpleTableOf(r *resolver, id string, res Resource) (*Table, error) {
	m, name, err := tableProps(r, id, res)
	if err != nil {
		return nil, err
	}
	key, typ := "id", types.ScalarAttributeTypeS
	if pk, ok := m["PrimaryKey"].(map[string]any); ok {
		if n, _ := pk["Name"].(string); n != "" {
			key = n
		}
		switch pk["Type"] {
		case "Number":
			typ = types.ScalarAttributeTypeN
		case "Binary":
			typ = types.ScalarAttributeTypeB
		case "String", nil:
		default:
			return nil, fmt.Errorf("%w: PrimaryKey Type %v: want String, Number or Binary", ErrTemplate, pk["Type"])
		}
	}
	in := &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(key), AttributeType: typ}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(key), KeyType: types.KeyTypeHash}}}
	if v, ok := m["ProvisionedThroughput"]; ok {
		if err := convert(v, &in.ProvisionedThroughput); err != nil {
			return nil, err
		}
		in.BillingMode = types.BillingModeProvisioned
	}
	return &Table{LogicalID: id, Input: in}, nil
}

// convert decodes a resolved template value into an SDK type: their
// member names are CloudFormation's. Numbers in the template are strings.
func convert(v any, dst any) error {
	b, err := json.Marshal(numbers(v))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}

// numbers turns the digit strings of ReadCapacityUnits and the like into
// numbers, as the SDK's types want.
func numbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			if s, ok := x.(string); ok && strings.HasSuffix(k, "Units") {
				if n, err := strconv.ParseInt(s, 10, 64); err == nil {
					out[k] = n
					continue
				}
			}
			out[k] = numbers(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = numbers(x)
		}
		return out
	}
	return v
}

func functionOf(r *resolver, t *Template, id string, res Resource, globals map[string]any, cfg PlanConfig, p *Plan) (*Function, error) {
	props := map[string]any{}
	maps.Copy(props, globals)
	maps.Copy(props, res.Properties)
	// Environment variables merge, the function's winning.
	vars := map[string]any{}
	for _, src := range []map[string]any{globals, res.Properties} {
		if env, ok := src["Environment"].(map[string]any); ok {
			if v, ok := env["Variables"].(map[string]any); ok {
				maps.Copy(vars, v)
			}
		}
	}
	fn := &Function{Name: id, Timeout: 3, MemorySize: 128, Env: map[string]string{}, Events: map[string]string{}}
	for _, k := range sortedKeys(vars) {
		s, err := r.str(vars[k])
		if err != nil {
			return nil, fmt.Errorf("environment variable %s: %w", k, err)
		}
		fn.Env[k] = s
	}
	var err error
	if v, ok := props["Timeout"]; ok {
		if fn.Timeout, err = intOf(r, v); err != nil {
			return nil, fmt.Errorf("property Timeout: %w", err)
		}
	}
	if v, ok := props["MemorySize"]; ok {
		if fn.MemorySize, err = intOf(r, v); err != nil {
			return nil, fmt.Errorf("property MemorySize: %w", err)
		}
	}
	if fn.Runtime, err = r.str(props["Runtime"]); err != nil {
		return nil, err
	}
	if code, ok := props["CodeUri"].(string); ok && code != "" {
		fn.CodeDir = code
		if !strings.HasPrefix(code, "/") {
			fn.CodeDir = t.Dir + "/" + code
		}
	}
	fn.BuildMethod, _ = res.Metadata["BuildMethod"].(string)
	events, _ := props["Events"].(map[string]any)
	for _, name := range sortedKeys(events) {
		ev, _ := events[name].(map[string]any)
		typ, _ := ev["Type"].(string)
		evProps, _ := ev["Properties"].(map[string]any)
		switch typ {
		case "HttpApi", "Api":
			rt, err := routeOf(r, t, id, typ == "Api", evProps, cfg, p)
			if err != nil {
				return nil, fmt.Errorf("event %s: %w", name, err)
			}
			fn.Routes = append(fn.Routes, rt)
		default:
			fn.Events[name] = typ
		}
	}
	return fn, nil
}

func intOf(r *resolver, v any) (int, error) {
	s, err := r.str(v)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: %q is not a positive integer", ErrTemplate, s)
	}
	return n, nil
}

func routeOf(r *resolver, t *Template, fnName string, rest bool, props map[string]any, cfg PlanConfig, p *Plan) (*Route, error) {
	rt := &Route{Function: fnName, REST: rest, Payload: "2.0", Method: "ANY", Path: "$default"}
	if rest {
		rt.Payload = "1.0"
	}
	var err error
	if v, ok := props["Method"]; ok {
		if rt.Method, err = r.str(v); err != nil {
			return nil, err
		}
		rt.Method = strings.ToUpper(rt.Method)
		if rt.Method == "X-AMAZON-APIGATEWAY-ANY-METHOD" {
			rt.Method = "ANY"
		}
	}
	if v, ok := props["Path"]; ok {
		if rt.Path, err = r.str(v); err != nil {
			return nil, err
		}
	}
	if rest && (rt.Path == "$default" || props["Path"] == nil) {
		return nil, fmt.Errorf("%w: an Api event needs a Path", ErrTemplate)
	}
	if v, ok := props["PayloadFormatVersion"]; ok && !rest {
		if rt.Payload, err = r.str(v); err != nil {
			return nil, err
		}
		if rt.Payload != "1.0" && rt.Payload != "2.0" {
			return nil, fmt.Errorf("%w: PayloadFormatVersion %q: want 1.0 or 2.0", ErrTemplate, rt.Payload)
		}
	}
	// The API: the event's ApiId / RestApiId, else the implicit one.
	apiKey, globalKey, implicit := "ApiId", "HttpApi", "ServerlessHttpApi"
	if rest {
		apiKey, globalKey, implicit = "RestApiId", "Api", "ServerlessRestApi"
	}
	apiProps := map[string]any{}
	if g, ok := t.Globals[globalKey].(map[string]any); ok {
		maps.Copy(apiProps, g)
	}
	api := implicit
	if ref, ok := props[apiKey].(map[string]any); ok {
		if name, ok := ref["Ref"].(string); ok {
			res, found := t.Resources[name]
			if !found {
				return nil, fmt.Errorf("%w: %s %s: no such resource", ErrTemplate, apiKey, name)
			}
			api = name
			maps.Copy(apiProps, res.Properties)
		}
	}
	auth, _ := apiProps["Auth"].(map[string]any)
	authorizer, _ := auth["DefaultAuthorizer"].(string)
	if ea, ok := props["Auth"].(map[string]any); ok {
		if a, ok := ea["Authorizer"].(string); ok {
			authorizer = a
		}
		if fmt.Sprint(ea["ApiKeyRequired"]) == "true" {
			return unsupported(rt, "an API key (ApiKeyRequired)", cfg)
		}
	}
	if fmt.Sprint(auth["ApiKeyRequired"]) == "true" {
		return unsupported(rt, "an API key (ApiKeyRequired)", cfg)
	}
	if authorizer == "" || authorizer == "NONE" {
		return rt, nil
	}
	if authorizer == "AWS_IAM" {
		return unsupported(rt, "IAM (AWS_IAM)", cfg)
	}
	defs, _ := auth["Authorizers"].(map[string]any)
	def, ok := defs[authorizer].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: authorizer %s is not among %s's Authorizers", ErrTemplate, authorizer, api)
	}
	jwt, ok := def["JwtConfiguration"].(map[string]any)
	if !ok {
		kind := "a Lambda authorizer"
		if def["UserPoolArn"] != nil {
			kind = "a Cognito user pool authorizer"
		}
		return unsupported(rt, kind+" ("+authorizer+")", cfg)
	}
	key := api + "/" + authorizer
	if _, done := p.Authorizers[key]; !done {
		jc := &JWTConfig{Issuer: DefaultIssuer, Audience: []string{DefaultAudience}}
		if iss, err := r.str(jwt["issuer"]); err == nil && iss != "" {
			jc.Issuer = iss
		}
		if aud, err := r.eval(jwt["audience"]); err == nil {
			var l []string
			switch a := aud.(type) {
			case []any:
				for _, x := range a {
					if s := scalar(x); s != "" {
						l = append(l, s)
					}
				}
			case string:
				if a != "" {
					l = []string{a}
				}
			}
			if len(l) > 0 {
				jc.Audience = l
			}
		}
		p.Authorizers[key] = jc
	}
	rt.Authorizer = key
	return rt, nil
}

func unsupported(rt *Route, kind string, cfg PlanConfig) (*Route, error) {
	if cfg.SkipUnsupportedAuth {
		return rt, nil
	}
	return nil, fmt.Errorf("%w: route %s uses %s, which is not run locally (only JWT authorizers are); -skip-unsupported-auth serves it without an authorizer", ErrTemplate, rt.RouteKey(), kind)
}
