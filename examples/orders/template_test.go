package orders_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsdynamodb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/cloudformation"
	cfndynamodb "github.com/awslabs/goformation/v7/cloudformation/dynamodb"
	"github.com/awslabs/goformation/v7/cloudformation/serverless"
	"github.com/awslabs/goformation/v7/intrinsics"

	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/examples/orders"
	"github.com/idemkit/idemkit/internal/testing/testkit"
)

const templatePath = "../../template.yaml"

// Resolved intrinsics name what they point at, so that the test can tell
// the idempotency table's ARN from any other: a Ref to a resource becomes
// "ref:<LogicalId>", a GetAtt "getatt:<LogicalId>.<Attribute>"; a Ref to a
// parameter is its default and Fn::Sub substitutes both. goformation's own
// handlers resolve resource Refs and GetAtts to nothing.
func templateOptions() *intrinsics.ProcessorOptions {
	var ref intrinsics.IntrinsicHandler = func(name string, input, template any) any {
		s, _ := input.(string)
		if s == "AWS::Partition" {
			return "aws"
		}
		if s == "AWS::URLSuffix" {
			return "amazonaws.com"
		}
		if t, ok := template.(map[string]any); ok {
			if rs, ok := t["Resources"].(map[string]any); ok {
				if _, ok := rs[s]; ok {
					return "ref:" + s
				}
			}
		}
		return intrinsics.Ref(name, input, template)
	}
	getAtt := func(_ string, input, _ any) any {
		switch v := input.(type) {
		case string:
			return "getatt:" + v
		case []any:
			parts := make([]string, len(v))
			for i, p := range v {
				parts[i] = fmt.Sprint(p)
			}
			return "getatt:" + strings.Join(parts, ".")
		}
		return nil
	}
	vars := regexp.MustCompile(`\$\{([^}!]+)\}`)
	sub := func(name string, input, template any) any {
		src, named := "", map[string]any{}
		switch v := input.(type) {
		case string:
			src = v
		case []any:
			if len(v) != 2 {
				return nil
			}
			src, _ = v[0].(string)
			named, _ = v[1].(map[string]any)
		default:
			return nil
		}
		return vars.ReplaceAllStringFunc(src, func(m string) string {
			k := m[2 : len(m)-1]
			if v, ok := named[k]; ok {
				return fmt.Sprint(v)
			}
			if strings.Contains(k, ".") {
				return fmt.Sprint(getAtt("Fn::GetAtt", k, template))
			}
			return fmt.Sprint(ref("Ref", k, template))
		})
	}
	return &intrinsics.ProcessorOptions{
		EvaluateConditions: true,
		IntrinsicHandlerOverrides: map[string]intrinsics.IntrinsicHandler{
			"Ref": ref, "Fn::GetAtt": getAtt, "Fn::Sub": sub,
		},
	}
}

// loadTemplate returns template.yaml parsed by goformation and, for the
// parts goformation types loosely (policies, events, the HTTP API), as
// plain JSON, both with intrinsics resolved by templateOptions.
func loadTemplate(t *testing.T) (*cloudformation.Template, map[string]any) {
	t.Helper()
	tpl, err := goformation.OpenWithOptions(templatePath, templateOptions())
	if err != nil {
		t.Fatalf("parse %s: %v", templatePath, err)
	}
	data, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	js, err := intrinsics.ProcessYAML(data, templateOptions())
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(js, &raw); err != nil {
		t.Fatal(err)
	}
	return tpl, raw
}

// function returns the template's serverless function called name, failing t
// when it has none.
func function(t *testing.T, tpl *cloudformation.Template, name string) *serverless.Function {
	t.Helper()
	fn, err := tpl.GetServerlessFunctionWithName(name)
	if err != nil {
		t.Fatal(err)
	}
	return fn
}

func resource(t *testing.T, raw map[string]any, name string) map[string]any {
	t.Helper()
	r, ok := raw["Resources"].(map[string]any)[name].(map[string]any)
	if !ok {
		t.Fatalf("template.yaml: no resource %s", name)
	}
	return r
}

func props(t *testing.T, raw map[string]any, name string) map[string]any {
	t.Helper()
	p, _ := resource(t, raw, name)["Properties"].(map[string]any)
	return p
}

type keyElem struct{ Name, Type string }

// want is what a table definition from Go code (dynamo.TableDefinition,
// orders.OrdersTableDefinition) requires of the template's table.
type want struct {
	keys  []keyElem
	attrs []keyElem
	gsis  map[string][]keyElem // index name -> key schema; projection ALL
}

func wantFrom(in *awsdynamodb.CreateTableInput) want {
	w := want{gsis: map[string][]keyElem{}}
	for _, k := range in.KeySchema {
		w.keys = append(w.keys, keyElem{aws.ToString(k.AttributeName), string(k.KeyType)})
	}
	for _, a := range in.AttributeDefinitions {
		w.attrs = append(w.attrs, keyElem{aws.ToString(a.AttributeName), string(a.AttributeType)})
	}
	for _, g := range in.GlobalSecondaryIndexes {
		var ks []keyElem
		for _, k := range g.KeySchema {
			ks = append(ks, keyElem{aws.ToString(k.AttributeName), string(k.KeyType)})
		}
		if g.Projection == nil || g.Projection.ProjectionType != "ALL" {
			panic("index without projection ALL")
		}
		w.gsis[aws.ToString(g.IndexName)] = ks
	}
	sortElems(w.attrs)
	return w
}

func sortElems(e []keyElem) { sort.Slice(e, func(i, j int) bool { return e[i].Name < e[j].Name }) }

func checkTable(t *testing.T, name string, tbl *cfndynamodb.Table, w want) {
	t.Helper()
	var keys, attrs []keyElem
	for _, k := range tbl.KeySchema {
		keys = append(keys, keyElem{k.AttributeName, k.KeyType})
	}
	for _, a := range tbl.AttributeDefinitions {
		attrs = append(attrs, keyElem{a.AttributeName, a.AttributeType})
	}
	sortElems(attrs)
	if !slices.Equal(keys, w.keys) {
		t.Errorf("%s: KeySchema %v, the code expects %v", name, keys, w.keys)
	}
	if !slices.Equal(attrs, w.attrs) {
		t.Errorf("%s: AttributeDefinitions %v, the code expects %v", name, attrs, w.attrs)
	}
	got := map[string][]keyElem{}
	for _, g := range tbl.GlobalSecondaryIndexes {
		var ks []keyElem
		for _, k := range g.KeySchema {
			ks = append(ks, keyElem{k.AttributeName, k.KeyType})
		}
		got[g.IndexName] = ks
		if g.Projection == nil || aws.ToString(g.Projection.ProjectionType) != "ALL" {
			t.Errorf("%s: index %s must project ALL", name, g.IndexName)
		}
	}
	for n := range got {
		if _, ok := w.gsis[n]; !ok {
			t.Errorf("%s: index %s is not one the code expects", name, n)
		}
	}
	for n, ks := range w.gsis {
		if !slices.Equal(got[n], ks) {
			t.Errorf("%s: index %s key schema %v, the code expects %v", name, n, got[n], ks)
		}
	}
	if aws.ToString(tbl.BillingMode) != "PAY_PER_REQUEST" {
		t.Errorf("%s: BillingMode %q, want PAY_PER_REQUEST", name, aws.ToString(tbl.BillingMode))
	}
	if tbl.PointInTimeRecoverySpecification == nil || !aws.ToBool(tbl.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled) {
		t.Errorf("%s: point-in-time recovery is off", name)
	}
	if tbl.SSESpecification == nil || !tbl.SSESpecification.SSEEnabled {
		t.Errorf("%s: SSE is off", name)
	}
	if tbl.DeletionProtectionEnabled == nil {
		t.Errorf("%s: DeletionProtectionEnabled is not set (a parameter)", name)
	}
}

// The idempotency table must be the one package dynamo creates and reads:
// a drifted key, index or TTL attribute breaks claims, operator listings
// or expiry in production only.
func TestTemplateIdempotencyTableMatchesDynamo(t *testing.T) {
	tpl, _ := loadTemplate(t)
	tbl, err := tpl.GetDynamoDBTableWithName("IdempotencyTable")
	if err != nil {
		t.Fatal(err)
	}
	checkTable(t, "IdempotencyTable", tbl, wantFrom(dynamo.TableDefinition("x", dynamo.Options{})))
	ttl := tbl.TimeToLiveSpecification
	if ttl == nil || !ttl.Enabled || aws.ToString(ttl.AttributeName) != dynamo.TTLAttr {
		got := "none"
		if ttl != nil {
			got = fmt.Sprintf("%q enabled=%v", aws.ToString(ttl.AttributeName), ttl.Enabled)
		}
		t.Errorf("IdempotencyTable: TTL %s, want enabled on %q (dynamo.TTLAttr)", got, dynamo.TTLAttr)
	}
}

func TestTemplateOrdersTableMatchesRepo(t *testing.T) {
	tpl, _ := loadTemplate(t)
	tbl, err := tpl.GetDynamoDBTableWithName("OrdersTable")
	if err != nil {
		t.Fatal(err)
	}
	checkTable(t, "OrdersTable", tbl, wantFrom(orders.OrdersTableDefinition("x")))
	if tbl.TimeToLiveSpecification != nil && tbl.TimeToLiveSpecification.Enabled {
		t.Errorf("OrdersTable: orders must not expire")
	}
}

// The function's role may do what the code does and nothing more: the
// three item operations the guard makes on the idempotency table (claim,
// complete and release: PutItem; mark indeterminate: UpdateItem; the read
// of a lost claim's record: GetItem) and the two reads of its startup
// check (DescribeTable, DescribeTimeToLive), PutItem and Query on the
// orders table, SendMessage on the shipping queue (the shipping worker's
// are checked by TestTemplateShippingWorker). No wildcards, no Scan, no
// other resources,
// no SAM policy templates or managed policies, no role of its own.
func TestTemplateFunctionPolicyIsLeastPrivilege(t *testing.T) {
	_, raw := loadTemplate(t)
	for name, r := range raw["Resources"].(map[string]any) {
		if typ, _ := r.(map[string]any)["Type"].(string); strings.HasPrefix(typ, "AWS::IAM::") {
			t.Errorf("resource %s (%s): grants are to be made in the functions' Policies only", name, typ)
		}
	}
	checkLeastPrivilege(t, raw, "OrdersFunction", map[string][]string{
		tableARN("IdempotencyTable"): {"dynamodb:DescribeTable", "dynamodb:DescribeTimeToLive", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"},
		tableARN("OrdersTable"):      {"dynamodb:PutItem", "dynamodb:Query"},
		// The ship request of each order created (orders.SQSOutbox).
		"getatt:ShippingQueue.Arn": {"sqs:SendMessage"},
	})
}

func tableARN(logical string) string {
	return "arn:aws:dynamodb:us-east-1:123456789012:table/ref:" + logical
}

// checkLeastPrivilege checks that the inline Policies of function grant
// exactly allowed: each action on its resource, nothing else.
func checkLeastPrivilege(t *testing.T, raw map[string]any, function string, allowed map[string][]string) {
	t.Helper()
	fn := props(t, raw, function)
	if _, ok := fn["Role"]; ok {
		t.Fatalf("%s: Role is set; the test checks the Policies SAM turns into its role", function)
	}
	granted := map[string][]string{}
	pols, ok := fn["Policies"].([]any)
	if !ok {
		t.Fatalf("%s: Policies must be a list of inline policy documents, got %T", function, fn["Policies"])
	}
	for i, p := range pols {
		doc, ok := p.(map[string]any)
		if !ok {
			t.Fatalf("Policies[%d]: %v is a managed policy or policy template name; use an inline statement", i, p)
		}
		for k := range doc {
			if k != "Statement" && k != "Version" {
				t.Fatalf("Policies[%d]: %q is a SAM policy template or unknown; use an inline statement", i, k)
			}
		}
		stmts, _ := doc["Statement"].([]any)
		for _, s := range stmts {
			st := s.(map[string]any)
			if st["Effect"] != "Allow" {
				continue
			}
			if _, ok := st["NotAction"]; ok {
				t.Errorf("statement %v: NotAction grants everything else", st["Sid"])
			}
			if _, ok := st["NotResource"]; ok {
				t.Errorf("statement %v: NotResource grants everything else", st["Sid"])
			}
			if _, ok := st["Condition"]; ok {
				t.Logf("statement %v has a Condition; checked as if it had none", st["Sid"])
			}
			for _, res := range list(st["Resource"]) {
				if _, ok := allowed[res]; !ok {
					t.Errorf("%s: statement %v: resource %q is not one of the function's resources (%v)", function, st["Sid"], res, keys(allowed))
				}
				for _, a := range list(st["Action"]) {
					if strings.Contains(a, "*") {
						t.Errorf("statement %v: wildcard action %q", st["Sid"], a)
					}
					if !slices.Contains(allowed[res], a) {
						t.Errorf("%s: statement %v: %s on %s is more than the function needs", function, st["Sid"], a, res)
					}
					granted[res] = append(granted[res], a)
				}
			}
		}
	}
	for res, acts := range allowed {
		for _, a := range acts {
			if !slices.Contains(granted[res], a) {
				t.Errorf("%s: %s on %s is not granted: the function needs it", function, a, res)
			}
		}
	}
}

func list(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
		return out
	}
	return []string{fmt.Sprint(v)}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// The function is the Go bootstrap built from cmd/lambda, on the routes
// the code serves, behind the JWT authorizer, with the environment
// orders.FromEnv reads.
func TestTemplateFunction(t *testing.T) {
	tpl, raw := loadTemplate(t)
	fn := function(t, tpl, "OrdersFunction")
	if got := aws.ToString(fn.Runtime); got != "provided.al2023" {
		t.Errorf("Runtime %q, want provided.al2023", got)
	}
	if !slices.Equal(fn.Architectures, []string{"arm64"}) {
		t.Errorf("Architectures %v, want [arm64]", fn.Architectures)
	}
	if got := aws.ToString(fn.Handler); got != "bootstrap" {
		t.Errorf("Handler %q, want bootstrap", got)
	}
	if fn.Timeout == nil || *fn.Timeout != int(orders.DefaultLocalTimeout.Seconds()) {
		t.Errorf("Timeout %v, want %v: the local server's deadline (orders.DefaultLocalTimeout)", fn.Timeout, orders.DefaultLocalTimeout)
	}
	meta, _ := resource(t, raw, "OrdersFunction")["Metadata"].(map[string]any)
	if meta["BuildMethod"] != "makefile" {
		t.Errorf("Metadata.BuildMethod %v, want makefile (the recipe of make build: TestSAMBuildIsMakeBuild)", meta["BuildMethod"])
	}
	code, _ := props(t, raw, "OrdersFunction")["CodeUri"].(string)
	if _, err := os.Stat(filepath.Join("../..", code, "Makefile")); err != nil || filepath.Clean(code) != "examples/orders/cmd/lambda" {
		t.Errorf("CodeUri %q, want examples/orders/cmd/lambda (%v)", code, err)
	}

	env := fn.Environment.Variables
	for k, v := range map[string]string{
		orders.EnvStore:          "dynamodb",
		orders.EnvTable:          "ref:IdempotencyTable",
		orders.EnvOrdersTable:    "ref:OrdersTable",
		orders.EnvReplayHours:    "24",
		orders.EnvRetentionHours: "168",
	} {
		if env[k] != v {
			t.Errorf("Environment %s = %q, want %q", k, env[k], v)
		}
	}
	// The tables are plain tables of this stack's region: a home region
	// elsewhere would name a table that does not exist there
	// (docs/DEPLOY.md says how to deploy to more than one region).
	if v, ok := env[orders.EnvHomeRegion]; ok {
		t.Errorf("Environment %s = %q: the template's tables are in the stack's region only", orders.EnvHomeRegion, v)
	}
	if _, ok := tpl.Parameters["HomeRegion"]; ok {
		t.Errorf("parameter HomeRegion: the template's tables are in the stack's region only")
	}

	var routes []string
	for name, e := range props(t, raw, "OrdersFunction")["Events"].(map[string]any) {
		ev := e.(map[string]any)
		p := ev["Properties"].(map[string]any)
		if ev["Type"] != "HttpApi" || p["ApiId"] != "ref:OrdersApi" || p["PayloadFormatVersion"] != "2.0" {
			t.Errorf("event %s: want an HttpApi event on OrdersApi with payload 2.0, got %v", name, ev)
		}
		if _, ok := p["Auth"]; ok {
			t.Errorf("event %s: overrides the API's JWT authorizer", name)
		}
		routes = append(routes, fmt.Sprintf("%s %s", p["Method"], p["Path"]))
	}
	sort.Strings(routes)
	want := slices.Clone(orders.Routes)
	sort.Strings(want)
	if !slices.Equal(routes, want) {
		t.Errorf("routes %v, the code serves %v", routes, want)
	}

	auth, _ := props(t, raw, "OrdersApi")["Auth"].(map[string]any)
	def, _ := auth["DefaultAuthorizer"].(string)
	az, _ := auth["Authorizers"].(map[string]any)[def].(map[string]any)
	jwt, _ := az["JwtConfiguration"].(map[string]any)
	if def == "" || jwt == nil || az["IdentitySource"] != "$request.header.Authorization" {
		t.Errorf("OrdersApi: want a default JWT authorizer on the Authorization header, got %v", auth)
	}

	for _, p := range []string{"JwtIssuer", "JwtAudience", "ReplayWindowHours", "RecordRetentionHours", "DeletionProtection", "LogRetentionDays"} {
		if _, ok := tpl.Parameters[p]; !ok {
			t.Errorf("parameter %s missing", p)
		}
	}
	for _, o := range []string{"ApiUrl", "IdempotencyTableName"} {
		if _, ok := tpl.Outputs[o]; !ok {
			t.Errorf("output %s missing", o)
		}
	}
}

// TestTemplateLogRetentionDays: CloudWatch Logs accepts only these
// retentions; anything else would fail the deployment halfway, so the
// parameter offers exactly them and its default is one.
func TestTemplateLogRetentionDays(t *testing.T) {
	tpl, _ := loadTemplate(t)
	p, ok := tpl.Parameters["LogRetentionDays"]
	if !ok {
		t.Fatal("parameter LogRetentionDays missing")
	}
	valid := []string{"1", "3", "5", "7", "14", "30", "60", "90", "120", "150", "180", "365", "400", "545", "731", "1096", "1827", "2192", "2557", "2922", "3288", "3653"}
	var allowed []string
	for _, v := range p.AllowedValues {
		allowed = append(allowed, fmt.Sprint(v))
	}
	if !slices.Equal(allowed, valid) {
		t.Errorf("LogRetentionDays AllowedValues %v, want CloudWatch Logs' %v", allowed, valid)
	}
	if d := fmt.Sprint(p.Default); !slices.Contains(valid, d) {
		t.Errorf("LogRetentionDays default %s is not a retention CloudWatch Logs accepts", d)
	}
}

// TestDeployDocMatchesTemplate: docs/DEPLOY.md names every parameter of
// template.yaml, each one that has a default followed by it in
// parentheses ("`Name` (default; ..."), and every output.
func TestDeployDocMatchesTemplate(t *testing.T) {
	tpl, _ := loadTemplate(t)
	doc := strings.Join(strings.Fields(testkit.Doc(t, "../../docs/DEPLOY.md")), " ")
	for name, p := range tpl.Parameters {
		if !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("docs/DEPLOY.md does not name parameter %s", name)
			continue
		}
		if p.Default == nil {
			continue
		}
		def := regexp.QuoteMeta(fmt.Sprint(p.Default))
		if !regexp.MustCompile("`" + name + "` \\(`?" + def + "`?[;:)]").MatchString(doc) {
			t.Errorf("docs/DEPLOY.md does not give parameter %s its default %v as \"`%s` (%v...\"", name, p.Default, name, p.Default)
		}
	}
	for name := range tpl.Outputs {
		if !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("docs/DEPLOY.md does not name output %s", name)
		}
	}
}

// TestTemplateHoursBounds: the hours parameters have a MinValue and a
// MaxValue the function accepts, and it refuses one hour more (MaxValue is
// its bound), so CloudFormation refuses at deploy time what the function would refuse
// at its start.
func TestTemplateHoursBounds(t *testing.T) {
	tpl, _ := loadTemplate(t)
	for _, name := range []string{"ReplayWindowHours", "RecordRetentionHours"} {
		p, ok := tpl.Parameters[name]
		if !ok {
			t.Errorf("parameter %s missing", name)
			continue
		}
		if p.MinValue == nil || p.MaxValue == nil {
			t.Errorf("%s: MinValue set %t, MaxValue set %t; want both", name, p.MinValue != nil, p.MaxValue != nil)
			continue
		}
		fromEnv := func(h float64) error {
			v := strconv.FormatFloat(h, 'f', -1, 64)
			_, _, err := orders.FromEnv(context.Background(), func(k string) string {
				switch k {
				case orders.EnvReplayHours, orders.EnvRetentionHours:
					return v // both, so that retention >= replay holds
				}
				return ""
			}, nil)
			return err
		}
		for _, h := range []float64{*p.MinValue, *p.MaxValue} {
			if err := fromEnv(h); err != nil {
				t.Errorf("%s=%v allowed by the template, refused by the function: %v", name, h, err)
			}
		}
		if err := fromEnv(*p.MaxValue + 1); err == nil {
			t.Errorf("%s: MaxValue %v is below the function's bound; the function accepts %v", name, *p.MaxValue, *p.MaxValue+1)
		}
	}
}

// TestDeploySnippetMatchesDynamo: docs/DEPLOY.md's snippet for adding
// idemkit to an existing template (its table and the function's grant)
// is the layout of dynamo.TableDefinition with TTL on exp, and grants the
// function what template.yaml grants it on the records table; wrapped in
// a template, it passes cfn-lint where cfn-lint is installed.
func TestDeploySnippetMatchesDynamo(t *testing.T) {
	sect := testkit.Section(t, "../../docs/DEPLOY.md", "\n## Adding idemkit to your own template\n", "\n## ")
	var blocks []string
	for rest := sect; ; {
		_, b, ok := strings.Cut(rest, "```yaml\n")
		if !ok {
			break
		}
		b, rest, _ = strings.Cut(b, "```\n")
		blocks = append(blocks, b)
	}
	if len(blocks) != 2 {
		t.Fatalf("found %d yaml blocks, want the table and the function", len(blocks))
	}
	fn := strings.Replace(blocks[1], "      # ... your function's other properties, unchanged ...\n",
		"      CodeUri: .\n      Handler: bootstrap\n      Runtime: provided.al2023\n", 1)
	tplText := "AWSTemplateFormatVersion: \"2010-09-09\"\nTransform: AWS::Serverless-2016-10-31\nResources:\n" + blocks[0] + fn
	path := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(path, []byte(tplText), 0o644); err != nil {
		t.Fatal(err)
	}
	tpl, err := goformation.OpenWithOptions(path, templateOptions())
	if err != nil {
		t.Fatalf("parse the snippet: %v", err)
	}
	tbl, err := tpl.GetDynamoDBTableWithName("IdempotencyTable")
	if err != nil {
		t.Fatal(err)
	}
	checkTable(t, "snippet IdempotencyTable", tbl, wantFrom(dynamo.TableDefinition("x", dynamo.Options{})))
	if tbl.TimeToLiveSpecification == nil || !tbl.TimeToLiveSpecification.Enabled || aws.ToString(tbl.TimeToLiveSpecification.AttributeName) != dynamo.TTLAttr {
		t.Errorf("snippet IdempotencyTable: TTL %+v, want enabled on %s", tbl.TimeToLiveSpecification, dynamo.TTLAttr)
	}
	granted := func(text string) []string {
		t.Helper()
		var acts []string
		_, after, ok := strings.Cut(text, "Sid: IdempotencyRecords")
		if !ok {
			t.Fatal("no IdempotencyRecords statement")
		}
		after, _, _ = strings.Cut(after, "Resource:")
		for _, line := range strings.Split(after, "\n") {
			if a, ok := strings.CutPrefix(strings.TrimSpace(line), "- dynamodb:"); ok {
				acts = append(acts, a)
			}
		}
		slices.Sort(acts)
		return acts
	}
	tplBytes, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := granted(blocks[1]), granted(string(tplBytes)); !slices.Equal(got, want) || len(want) == 0 {
		t.Errorf("the snippet grants %v, template.yaml %v", got, want)
	}
	if _, err := exec.LookPath("cfn-lint"); err != nil {
		t.Log("cfn-lint not installed: the snippet is not linted")
		return
	}
	if out, err := exec.Command("cfn-lint", path).CombinedOutput(); err != nil {
		t.Errorf("cfn-lint on the snippet: %v\n%s", err, out)
	}
}

// TestTemplateShippingWorker: the shipping worker is the bootstrap built
// from cmd/shipping on the shipping queue, reading its partial batch
// responses (ReportBatchItemFailures: without it a batch is retried
// whole); its role may do what orders.ShippingHandler does and no more;
// the queue hides a message for at least six times the worker's timeout
// and moves one that keeps failing to a dead-letter queue; the orders
// function is told the queue.
func TestTemplateShippingWorker(t *testing.T) {
	tpl, raw := loadTemplate(t)
	fn := function(t, tpl, "ShippingFunction")
	if aws.ToString(fn.Runtime) != "provided.al2023" || !slices.Equal(fn.Architectures, []string{"arm64"}) || aws.ToString(fn.Handler) != "bootstrap" {
		t.Errorf("runtime %v %v %v, want provided.al2023 arm64 bootstrap", aws.ToString(fn.Runtime), fn.Architectures, aws.ToString(fn.Handler))
	}
	code, _ := props(t, raw, "ShippingFunction")["CodeUri"].(string)
	if _, err := os.Stat(filepath.Join("../..", code, "Makefile")); err != nil || filepath.Clean(code) != "examples/orders/cmd/shipping" {
		t.Errorf("CodeUri %q, want examples/orders/cmd/shipping with its Makefile (%v)", code, err)
	}
	if meta, _ := resource(t, raw, "ShippingFunction")["Metadata"].(map[string]any); meta["BuildMethod"] != "makefile" {
		t.Errorf("Metadata.BuildMethod %v, want makefile (the recipe of make build-shipping: TestSAMBuildIsMakeBuild)", meta["BuildMethod"])
	}
	for k, v := range map[string]string{orders.EnvStore: "dynamodb", orders.EnvTable: "ref:IdempotencyTable", orders.EnvOrdersTable: "ref:OrdersTable"} {
		if got := fn.Environment.Variables[k]; got != v {
			t.Errorf("ShippingFunction: Environment %s = %q, want %q", k, got, v)
		}
	}
	checkLeastPrivilege(t, raw, "ShippingFunction", map[string][]string{
		tableARN("IdempotencyTable"): {"dynamodb:DescribeTable", "dynamodb:DescribeTimeToLive", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"},
		tableARN("OrdersTable"):      {"dynamodb:PutItem", "dynamodb:Query"},
	})
	evs := props(t, raw, "ShippingFunction")["Events"].(map[string]any)
	if len(evs) != 1 {
		t.Fatalf("ShippingFunction: %d events, want the shipping queue's", len(evs))
	}
	for name, e := range evs {
		ev := e.(map[string]any)
		p, _ := ev["Properties"].(map[string]any)
		if ev["Type"] != "SQS" || p["Queue"] != "getatt:ShippingQueue.Arn" || !slices.Contains(list(p["FunctionResponseTypes"]), "ReportBatchItemFailures") {
			t.Errorf("event %s: %v, want SQS on ShippingQueue with ReportBatchItemFailures", name, ev)
		}
	}
	q := props(t, raw, "ShippingQueue")
	if vis, _ := q["VisibilityTimeout"].(float64); fn.Timeout == nil || vis < 6*float64(*fn.Timeout) {
		t.Errorf("ShippingQueue: VisibilityTimeout %v, want at least six times the worker's timeout %v", q["VisibilityTimeout"], fn.Timeout)
	}
	redrive, _ := q["RedrivePolicy"].(map[string]any)
	if redrive["deadLetterTargetArn"] != "getatt:ShippingDeadLetterQueue.Arn" || redrive["maxReceiveCount"] == nil {
		t.Errorf("ShippingQueue: RedrivePolicy %v, want the dead-letter queue", redrive)
	}
	api, _ := tpl.GetServerlessFunctionWithName("OrdersFunction")
	if got := api.Environment.Variables[orders.EnvShippingQueue]; got != "ref:ShippingQueue" {
		t.Errorf("OrdersFunction: Environment %s = %q, want the shipping queue's URL (ref:ShippingQueue)", orders.EnvShippingQueue, got)
	}
}
