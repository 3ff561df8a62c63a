package samlocal

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
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
	for _, id := range slices.Sorted(maps.Keys(t.Resources)) {
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
	pl := &planner{r: r, cfg: cfg, plan: p}
	globalFn, _ := t.Globals["Function"].(map[string]any)
	for _, id := range slices.Sorted(maps.Keys(t.Resources)) {
		res := t.Resources[id]
		if res.Type != "AWS::Serverless::Function" {
			continue
		}
		fn, err := pl.functionOf(id, res, globalFn)
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

// planner resolves a template's functions and their routes into plan.
type planner struct {
	r    *resolver
	cfg  PlanConfig
	plan *Plan
}

// functionOf resolves the function id, its properties over the Globals'
// (globals, less those it ignores: overGlobals), its HTTP events into
// routes.
func (pl *planner) functionOf(id string, res Resource, globals map[string]any) (*Function, error) {
	globals, err := res.IgnoreGlobals.of("Function", globals)
	if err != nil {
		return nil, err
	}
	props := overGlobals(globals, res.Properties)
	env, err := environment(pl.r, props)
	if err != nil {
		return nil, err
	}
	fn := &Function{Name: id, Env: env, Events: map[string]string{}, CodeDir: codeDir(pl.r.t.Dir, props["CodeUri"])}
	fn.BuildMethod, _ = res.Metadata["BuildMethod"].(string)
	if err := settings(pl.r, fn, props); err != nil {
		return nil, err
	}
	if err := pl.addEvents(fn, props); err != nil {
		return nil, err
	}
	return fn, nil
}

// environment resolves the environment variables of a function's
// properties (props, over the Globals').
func environment(r *resolver, props map[string]any) (map[string]string, error) {
	env, _ := props["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	out := make(map[string]string, len(vars))
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		s, err := r.str(vars[k])
		if err != nil {
			return nil, fmt.Errorf("environment variable %s: %w", k, err)
		}
		out[k] = s
	}
	return out, nil
}

// codeDir is a function's CodeUri joined to the template's directory dir
// unless absolute; empty when the CodeUri is not a string.
func codeDir(dir string, codeURI any) string {
	code, _ := codeURI.(string)
	if code == "" || strings.HasPrefix(code, "/") {
		return code
	}
	return dir + "/" + code
}

// settings sets fn's Timeout (3 s when props has none), MemorySize (128
// MB when none), each a positive integer, and Runtime.
func settings(r *resolver, fn *Function, props map[string]any) error {
	var err error
	if fn.Timeout, err = intProp(r, props, "Timeout", 3); err != nil {
		return err
	}
	if fn.MemorySize, err = intProp(r, props, "MemorySize", 128); err != nil {
		return err
	}
	fn.Runtime, err = r.str(props["Runtime"])
	return err
}

// intProp resolves the property key of props, a positive integer, or is
// def when props has none.
func intProp(r *resolver, props map[string]any, key string, def int) (int, error) {
	v, ok := props[key]
	if !ok {
		return def, nil
	}
	n, err := intOf(r, v)
	if err != nil {
		return 0, fmt.Errorf("property %s: %w", key, err)
	}
	return n, nil
}

// intOf resolves v, which must be a positive integer.
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

// addEvents adds fn's HttpApi and Api events (of props, in name order) to
// its Routes, its other events to its Events by type.
func (pl *planner) addEvents(fn *Function, props map[string]any) error {
	events, _ := props["Events"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(events)) {
		ev, _ := events[name].(map[string]any)
		typ, _ := ev["Type"].(string)
		if typ != "HttpApi" && typ != "Api" {
			fn.Events[name] = typ
			continue
		}
		evProps, _ := ev["Properties"].(map[string]any)
		rt, err := pl.routeOf(fn.Name, typ == "Api", evProps)
		if err != nil {
			return fmt.Errorf("event %s: %w", name, err)
		}
		fn.Routes = append(fn.Routes, rt)
	}
	return nil
}

// routeOf resolves the route of an HttpApi event (an Api event when rest)
// of function fnName, whose properties are props, with its authorizer.
func (pl *planner) routeOf(fnName string, rest bool, props map[string]any) (*Route, error) {
	rt, err := routeShape(pl.r, fnName, rest, props)
	if err != nil {
		return nil, err
	}
	api, apiProps, err := apiOf(pl.r.t, rest, props)
	if err != nil {
		return nil, err
	}
	return pl.withAuthorizer(rt, api, apiProps, props)
}

// routeShape is the route an event's Method (ANY when none), Path
// ($default when none, which an Api event must not be) and
// PayloadFormatVersion (an HttpApi event's: 1.0 or 2.0, 2.0 when none; an
// Api event's is 1.0) give.
func routeShape(r *resolver, fnName string, rest bool, props map[string]any) (*Route, error) {
	rt := &Route{Function: fnName, REST: rest, Payload: "2.0"}
	var err error
	if rt.Method, err = strProp(r, props, "Method", "ANY"); err != nil {
		return nil, err
	}
	if rt.Method = strings.ToUpper(rt.Method); rt.Method == "X-AMAZON-APIGATEWAY-ANY-METHOD" {
		rt.Method = "ANY"
	}
	if rt.Path, err = strProp(r, props, "Path", "$default"); err != nil {
		return nil, err
	}
	if rest {
		if rt.Path == "$default" || props["Path"] == nil {
			return nil, fmt.Errorf("%w: an Api event needs a Path", ErrTemplate)
		}
		rt.Payload = "1.0"
		return rt, nil
	}
	if rt.Payload, err = strProp(r, props, "PayloadFormatVersion", "2.0"); err != nil {
		return nil, err
	}
	if rt.Payload != "1.0" && rt.Payload != "2.0" {
		return nil, fmt.Errorf("%w: PayloadFormatVersion %q: want 1.0 or 2.0", ErrTemplate, rt.Payload)
	}
	return rt, nil
}

// strProp resolves the property key of props to a string, or is def when
// props has none.
func strProp(r *resolver, props map[string]any, key, def string) (string, error) {
	v, ok := props[key]
	if !ok {
		return def, nil
	}
	return r.str(v)
}

// apiOf is the API of an HttpApi event (an Api event when rest) of
// properties props, its ApiId's (RestApiId's) or else the implicit one's
// name, and the API's properties over the Globals' (less those the API
// ignores: overGlobals).
func apiOf(t *Template, rest bool, props map[string]any) (string, map[string]any, error) {
	apiKey, globalKey, api := "ApiId", "HttpApi", "ServerlessHttpApi"
	if rest {
		apiKey, globalKey, api = "RestApiId", "Api", "ServerlessRestApi"
	}
	globals, _ := t.Globals[globalKey].(map[string]any)
	ref, _ := props[apiKey].(map[string]any)
	name, ok := ref["Ref"].(string)
	if !ok {
		return api, globals, nil
	}
	res, found := t.Resources[name]
	if !found {
		return "", nil, fmt.Errorf("%w: %s %s: no such resource", ErrTemplate, apiKey, name)
	}
	globals, err := res.IgnoreGlobals.of(globalKey, globals)
	if err != nil {
		return "", nil, fmt.Errorf("%s %s: %w", apiKey, name, err)
	}
	return name, overGlobals(globals, res.Properties), nil
}

// withAuthorizer gives rt the JWT authorizer that its event's properties
// (props) or else its API (api, of properties apiProps) names, registered
// in the plan; a route without one is open, and one with another kind of
// authorizer or an API key is refused (unsupported).
func (pl *planner) withAuthorizer(rt *Route, api string, apiProps, props map[string]any) (*Route, error) {
	auth, _ := apiProps["Auth"].(map[string]any)
	authorizer, apiKey := authorizerOf(auth, props)
	switch {
	case apiKey:
		return unsupported(rt, "an API key (ApiKeyRequired)", pl.cfg)
	case authorizer == "" || authorizer == "NONE":
		return rt, nil
	case authorizer == "AWS_IAM":
		return unsupported(rt, "IAM (AWS_IAM)", pl.cfg)
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
		return unsupported(rt, kind+" ("+authorizer+")", pl.cfg)
	}
	rt.Authorizer = api + "/" + authorizer
	if _, done := pl.plan.Authorizers[rt.Authorizer]; !done {
		pl.plan.Authorizers[rt.Authorizer] = jwtConfig(pl.r, jwt)
	}
	return rt, nil
}

// authorizerOf is the authorizer a route names, its event's Auth
// Authorizer (of props) else its API's DefaultAuthorizer (of auth), and
// whether the event or the API requires an API key.
func authorizerOf(auth, props map[string]any) (string, bool) {
	name, _ := auth["DefaultAuthorizer"].(string)
	ea, _ := props["Auth"].(map[string]any)
	if a, ok := ea["Authorizer"].(string); ok {
		name = a
	}
	return name, fmt.Sprint(ea["ApiKeyRequired"]) == "true" || fmt.Sprint(auth["ApiKeyRequired"]) == "true"
}

// jwtConfig resolves a JwtConfiguration: its issuer, else DefaultIssuer,
// and its audience's non-empty members, else DefaultAudience.
func jwtConfig(r *resolver, jwt map[string]any) *JWTConfig {
	jc := &JWTConfig{Issuer: DefaultIssuer, Audience: []string{DefaultAudience}}
	if iss, err := r.str(jwt["issuer"]); err == nil && iss != "" {
		jc.Issuer = iss
	}
	if aud, err := r.eval(jwt["audience"]); err == nil {
		if l := nonEmpty(aud); len(l) > 0 {
			jc.Audience = l
		}
	}
	return jc
}

// nonEmpty is the non-empty strings of v, a list or a string.
func nonEmpty(v any) []string {
	var l []string
	switch v := v.(type) {
	case []any:
		for _, x := range v {
			if s := scalar(x); s != "" {
				l = append(l, s)
			}
		}
	case string:
		if v != "" {
			l = []string{v}
		}
	}
	return l
}

// unsupported refuses rt, which uses kind of authorization, or serves it
// open under SkipUnsupportedAuth.
func unsupported(rt *Route, kind string, cfg PlanConfig) (*Route, error) {
	if cfg.SkipUnsupportedAuth {
		return rt, nil
	}
	return nil, fmt.Errorf("%w: route %s uses %s, which is not run locally (only JWT authorizers are); -skip-unsupported-auth serves it without an authorizer", ErrTemplate, rt.RouteKey(), kind)
}
