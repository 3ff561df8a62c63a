package samlocal

import (
	"errors"
	"fmt"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Template is a SAM (or CloudFormation) template as read from its file:
// short-form tags (!Ref, !GetAtt, !Sub, ...) turned into their long forms,
// nothing resolved yet.
type Template struct {
	// Dir is the template's directory: CodeUri paths are relative to it.
	Dir        string
	Parameters map[string]map[string]any
	Conditions map[string]any
	Globals    map[string]any
	Resources  map[string]Resource
}

// Resource is one resource of a template.
type Resource struct {
	Type       string
	Properties map[string]any
	Metadata   map[string]any
	// IgnoreGlobals is the resource's IgnoreGlobals attribute.
	IgnoreGlobals IgnoreGlobals
}

// IgnoreGlobals is what of the template's Globals a resource is not
// given, as its IgnoreGlobals attribute says: every property ('*': All),
// or the properties it lists (Names); none when it has no such attribute.
type IgnoreGlobals struct {
	All   bool
	Names []string
}

// ignoreGlobalsOf reads the IgnoreGlobals attribute of the resource id
// (m): '*' or a list of property names; any other value is refused.
func ignoreGlobalsOf(id string, m map[string]any) (IgnoreGlobals, error) {
	v, ok := m["IgnoreGlobals"]
	if !ok {
		return IgnoreGlobals{}, nil
	}
	if v == "*" {
		return IgnoreGlobals{All: true}, nil
	}
	l, ok := v.([]any)
	names := make([]string, len(l))
	for i, x := range l {
		if names[i], ok = x.(string); !ok {
			break
		}
	}
	if !ok {
		return IgnoreGlobals{}, fmt.Errorf("%w: resource %s: IgnoreGlobals %v: want '*' or a list of Globals property names", ErrTemplate, id, v)
	}
	return IgnoreGlobals{Names: names}, nil
}

// of is globals, the properties a section of the template's Globals gives
// every resource of its type (Globals.Function, Globals.HttpApi, ...),
// less those ig ignores. A name of ig that globals lacks is refused, as
// SAM refuses it, when the template has that section (globals not nil).
func (ig IgnoreGlobals) of(section string, globals map[string]any) (map[string]any, error) {
	if ig.All {
		return nil, nil
	}
	if len(ig.Names) == 0 || globals == nil {
		return globals, nil
	}
	out := maps.Clone(globals)
	for _, name := range ig.Names {
		if _, ok := globals[name]; !ok {
			return nil, fmt.Errorf("%w: IgnoreGlobals names %s, which Globals.%s does not have", ErrTemplate, name, section)
		}
		delete(out, name)
	}
	return out, nil
}

// ErrTemplate is wrapped by every error about what a template says.
var ErrTemplate = errors.New("samlocal: template")

// ReadTemplate reads and parses the template at path (YAML or JSON).
func ReadTemplate(path string) (*Template, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	t, err := ParseTemplate(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t.Dir = filepath.Dir(abs)
	return t, nil
}

// ParseTemplate parses a template's text.
func ParseTemplate(b []byte) (*Template, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTemplate, err)
	}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrTemplate)
	}
	v, err := nodeValue(root.Content[0])
	if err != nil {
		return nil, err
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: not a mapping", ErrTemplate)
	}
	t := &Template{Parameters: map[string]map[string]any{}, Resources: map[string]Resource{}}
	t.Conditions, _ = doc["Conditions"].(map[string]any)
	t.Globals, _ = doc["Globals"].(map[string]any)
	params, _ := doc["Parameters"].(map[string]any)
	for name, p := range params {
		m, _ := p.(map[string]any)
		t.Parameters[name] = m
	}
	res, _ := doc["Resources"].(map[string]any)
	if len(res) == 0 {
		return nil, fmt.Errorf("%w: no Resources", ErrTemplate)
	}
	for id, r := range res {
		m, ok := r.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: resource %s is not a mapping", ErrTemplate, id)
		}
		typ, _ := m["Type"].(string)
		props, _ := m["Properties"].(map[string]any)
		meta, _ := m["Metadata"].(map[string]any)
		ignore, err := ignoreGlobalsOf(id, m)
		if err != nil {
			return nil, err
		}
		t.Resources[id] = Resource{Type: typ, Properties: props, Metadata: meta, IgnoreGlobals: ignore}
	}
	return t, nil
}

// nodeValue turns a YAML node into maps, slices and scalars, a short-form
// intrinsic (!Ref X) into its long form ({"Ref": X}).
func nodeValue(n *yaml.Node) (any, error) {
	var v any
	var err error
	switch n.Kind {
	case yaml.AliasNode:
		return nodeValue(n.Alias)
	case yaml.MappingNode:
		v, err = mappingValue(n)
	case yaml.SequenceNode:
		v, err = sequenceValue(n)
	case yaml.ScalarNode:
		v = scalarValue(n)
	}
	if err != nil {
		return nil, err
	}
	return longForm(n.Tag, v), nil
}

// mappingValue is a mapping node's value: its keys' values by key.
func mappingValue(n *yaml.Node) (map[string]any, error) {
	m := make(map[string]any, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		val, err := nodeValue(n.Content[i+1])
		if err != nil {
			return nil, err
		}
		m[n.Content[i].Value] = val
	}
	return m, nil
}

// sequenceValue is a sequence node's value: its members' values in order.
func sequenceValue(n *yaml.Node) ([]any, error) {
	s := make([]any, 0, len(n.Content))
	for _, c := range n.Content {
		val, err := nodeValue(c)
		if err != nil {
			return nil, err
		}
		s = append(s, val)
	}
	return s, nil
}

// scalarValue is a scalar node's value: a bool for !!bool, nil for
// !!null, else its text (CloudFormation's numbers are strings).
func scalarValue(n *yaml.Node) any {
	switch n.Tag {
	case "!!bool":
		b, _ := strconv.ParseBool(n.Value)
		return b
	case "!!null":
		return nil
	}
	return n.Value
}

// longForm is v under its node's short-form intrinsic tag in long form
// (!Ref X is {"Ref": X}, !GetAtt A.B is {"Fn::GetAtt": [A, B]}, !Sub X is
// {"Fn::Sub": X}), or v itself when tag is none or a YAML one (!!str).
func longForm(tag string, v any) any {
	if !strings.HasPrefix(tag, "!") || strings.HasPrefix(tag, "!!") {
		return v
	}
	name := tag[1:]
	switch name {
	case "Ref", "Condition":
		return map[string]any{name: v}
	case "GetAtt":
		if s, ok := v.(string); ok {
			id, attr, _ := strings.Cut(s, ".")
			v = []any{id, attr}
		}
	}
	return map[string]any{"Fn::" + name: v}
}

// Pseudo parameters' local values.
const (
	AccountID = "123456789012"
	Partition = "aws"
)

// resolver evaluates intrinsic functions against a local stack: parameters
// at their values, tables at their local names.
type resolver struct {
	t      *Template
	params map[string]any    // parameter values: string, or []any for lists
	names  map[string]string // physical names of resources, by logical id
	region string
	stack  string
}

// newResolver returns the resolver of t with its parameters' values: their
// defaults, or their overrides (which must name parameters of t).
func newResolver(t *Template, overrides map[string]string, region, stack string) (*resolver, error) {
	r := &resolver{t: t, params: map[string]any{}, names: map[string]string{}, region: region, stack: stack}
	for name, p := range t.Parameters {
		v, ok := p["Default"]
		if o, given := overrides[name]; given {
			v, ok = o, true
		}
		if !ok {
			continue // an error where it is used
		}
		s := scalar(v)
		if typ, _ := p["Type"].(string); strings.HasPrefix(typ, "CommaDelimitedList") || strings.HasPrefix(typ, "List<") {
			var l []any
			for _, x := range strings.Split(s, ",") {
				l = append(l, strings.TrimSpace(x))
			}
			r.params[name] = l
			continue
		}
		r.params[name] = s
	}
	for name := range overrides {
		if _, ok := t.Parameters[name]; !ok {
			return nil, fmt.Errorf("%w: parameter override %s: the template has no such parameter", ErrTemplate, name)
		}
	}
	return r, nil
}

// scalar is v as a string: nil is empty.
func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// eval returns v with every intrinsic function evaluated.
func (r *resolver) eval(v any) (any, error) {
	switch v := v.(type) {
	case []any:
		out := make([]any, 0, len(v))
		if err := evalMembers(r, slices.All(v), func(_ int, y any) { out = append(out, y) }); err != nil {
			return nil, err
		}
		return out, nil
	case map[string]any:
		if len(v) == 1 {
			for k, arg := range v {
				if k == "Ref" || strings.HasPrefix(k, "Fn::") {
					return r.intrinsic(k, arg)
				}
			}
		}
		out := make(map[string]any, len(v))
		if err := evalMembers(r, maps.All(v), func(k string, y any) { out[k] = y }); err != nil {
			return nil, err
		}
		return out, nil
	}
	return v, nil
}

// evalMembers evaluates the members of a list or a mapping and keeps each
// one's value but AWS::NoValue, which removes the member.
func evalMembers[K comparable](r *resolver, members iter.Seq2[K, any], keep func(K, any)) error {
	for k, x := range members {
		y, err := r.eval(x)
		if err != nil {
			return err
		}
		if y != noValue {
			keep(k, y)
		}
	}
	return nil
}

// noValue is AWS::NoValue: the member holding it is removed.
var noValue = &struct{ name string }{"AWS::NoValue"}

// str evaluates v to a string.
func (r *resolver) str(v any) (string, error) {
	x, err := r.eval(v)
	if err != nil {
		return "", err
	}
	switch x := x.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case nil:
		return "", nil
	}
	return "", fmt.Errorf("%w: %v is not a string", ErrTemplate, x)
}

// ref is Ref name: a pseudo parameter's local value, a parameter's value,
// a resource's local name (a table's physical name, an empty queue URL,
// else the logical id).
func (r *resolver) ref(name string) (any, error) {
	switch name {
	case "AWS::Region":
		return r.region, nil
	case "AWS::AccountId":
		return AccountID, nil
	case "AWS::StackName":
		return r.stack, nil
	case "AWS::StackId":
		return r.arn("cloudformation", "stack/"+r.stack+"/local"), nil
	case "AWS::Partition":
		return Partition, nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	case "AWS::NoValue":
		return noValue, nil
	}
	if v, ok := r.params[name]; ok {
		return v, nil
	}
	if _, ok := r.t.Parameters[name]; ok {
		return nil, fmt.Errorf("%w: parameter %s has no Default: give it a value (-parameter-overrides %s=...)", ErrTemplate, name, name)
	}
	return r.resourceRef(name)
}

// resourceRef is Ref of the resource id: its physical name when it has one
// locally (a table), "" for a queue, else its logical id.
func (r *resolver) resourceRef(id string) (any, error) {
	res, ok := r.t.Resources[id]
	if !ok {
		return nil, fmt.Errorf("%w: Ref %s: no such parameter or resource", ErrTemplate, id)
	}
	if n, ok := r.names[id]; ok {
		return n, nil
	}
	if res.Type == "AWS::SQS::Queue" {
		// No queue runs locally: a queue's URL is empty, so a function
		// that sends when it has one sends nothing (docs/DEPLOY.md).
		return "", nil
	}
	return id, nil
}

// arn is the ARN of resource (what follows the account id) of service
// svc in the stack's region and account.
func (r *resolver) arn(svc, resource string) string {
	return "arn:aws:" + svc + ":" + r.region + ":" + AccountID + ":" + resource
}

// getAtt is Fn::GetAtt [id, attr]: the attribute's local value (attribute).
func (r *resolver) getAtt(id, attr string) (any, error) {
	res, ok := r.t.Resources[id]
	if !ok {
		return nil, fmt.Errorf("%w: GetAtt %s.%s: no such resource", ErrTemplate, id, attr)
	}
	name, err := r.ref(id)
	if err != nil {
		return nil, err
	}
	n, _ := name.(string)
	return r.attribute(res.Type, id, n, attr), nil
}

// attribute is the local value of attribute attr of the resource id of
// type typ, whose Ref is n: a queue's QueueUrl is empty, its QueueName id,
// its Arn built from id; any other Arn, and a StreamArn, is built from n
// in the stack's region and account; any other attribute is n.
func (r *resolver) attribute(typ, id, n, attr string) string {
	if typ == "AWS::SQS::Queue" {
		switch attr {
		case "QueueUrl":
			return ""
		case "QueueName":
			return id
		case "Arn":
			return r.arn("sqs", id)
		}
	}
	switch {
	case attr == "StreamArn":
		return r.arn("dynamodb", "table/"+n+"/stream/local")
	case attr != "Arn":
		return n
	case typ == "AWS::DynamoDB::Table" || typ == "AWS::Serverless::SimpleTable":
		return r.arn("dynamodb", "table/"+n)
	case typ == "AWS::Serverless::Function":
		return r.arn("lambda", "function:"+n)
	}
	return r.arn(service(typ), n)
}

// service is the ARN service of a resource type: AWS::SNS::Topic's sns.
func service(typ string) string {
	return strings.ToLower(strings.TrimPrefix(strings.SplitN(strings.TrimPrefix(typ, "AWS::"), "::", 2)[0], "Serverless"))
}

// intrinsic evaluates the intrinsic function fn of argument arg (as the
// template has it, unevaluated); one that is not run locally is an error.
func (r *resolver) intrinsic(fn string, arg any) (any, error) {
	f, ok := intrinsics[fn]
	if !ok {
		return nil, fmt.Errorf("%w: %s is not supported locally", ErrTemplate, fn)
	}
	return f(r, fn, arg)
}

// intrinsics are the intrinsic functions run locally by name, each given
// its name and its argument unevaluated; init sets them, as they call
// eval, which calls them.
var intrinsics map[string]func(r *resolver, fn string, arg any) (any, error)

func init() {
	intrinsics = map[string]func(*resolver, string, any) (any, error){
		"Ref":        (*resolver).fnRef,
		"Fn::GetAtt": (*resolver).fnGetAtt,
		"Fn::Sub":    (*resolver).fnSub,
		"Fn::Join":   (*resolver).fnJoin,
		"Fn::Select": (*resolver).fnSelect,
		"Fn::Split":  (*resolver).fnSplit,
		"Fn::If":     (*resolver).fnIf,
		"Fn::Equals": (*resolver).fnCondition,
		"Fn::Not":    (*resolver).fnCondition,
		"Fn::And":    (*resolver).fnCondition,
		"Fn::Or":     (*resolver).fnCondition,
	}
}

// pair evaluates the argument of fn, which must then be a list of two,
// and returns its members; hint ends the error's text when it is not.
func (r *resolver) pair(fn string, arg any, hint string) (any, any, error) {
	a, err := r.eval(arg)
	if err != nil {
		return nil, nil, err
	}
	l, _ := a.([]any)
	if len(l) != 2 {
		return nil, nil, fmt.Errorf("%w: %s %v%s", ErrTemplate, fn, arg, hint)
	}
	return l[0], l[1], nil
}

// fnRef is Ref: a parameter's value, a resource's local name, or a pseudo
// parameter's local value (ref).
func (r *resolver) fnRef(_ string, arg any) (any, error) {
	name, err := r.str(arg)
	if err != nil {
		return nil, err
	}
	return r.ref(name)
}

// fnGetAtt is Fn::GetAtt [resource, attribute]: the attribute's local
// value (getAtt).
func (r *resolver) fnGetAtt(fn string, arg any) (any, error) {
	id, attr, err := r.pair(fn, arg, ": want [resource, attribute]")
	if err != nil {
		return nil, err
	}
	return r.getAtt(scalar(id), scalar(attr))
}

// fnSub is Fn::Sub of a text, or of [text, variables] whose variables are
// evaluated first and win over the template's names (sub).
func (r *resolver) fnSub(fn string, arg any) (any, error) {
	switch a := arg.(type) {
	case string:
		return r.sub(a, nil)
	case []any:
		if len(a) != 2 {
			break
		}
		vars, err := r.subVars(a[1])
		if err != nil {
			return nil, err
		}
		return r.sub(scalar(a[0]), vars)
	}
	return nil, fmt.Errorf("%w: %s %v", ErrTemplate, fn, arg)
}

// subVars evaluates the variables of an Fn::Sub [text, variables].
func (r *resolver) subVars(v any) (map[string]any, error) {
	m, _ := v.(map[string]any)
	vars := make(map[string]any, len(m))
	for k, x := range m {
		y, err := r.eval(x)
		if err != nil {
			return nil, err
		}
		vars[k] = y
	}
	return vars, nil
}

// fnJoin is Fn::Join [delimiter, list]: the list's members joined by the
// delimiter.
func (r *resolver) fnJoin(fn string, arg any) (any, error) {
	sep, list, err := r.pair(fn, arg, "")
	if err != nil {
		return nil, err
	}
	parts, _ := list.([]any)
	return join(parts, scalar(sep)), nil
}

// fnSelect is Fn::Select [index, list]: the list's member at index, which
// must be in range.
func (r *resolver) fnSelect(fn string, arg any) (any, error) {
	index, list, err := r.pair(fn, arg, "")
	if err != nil {
		return nil, err
	}
	i, err := strconv.Atoi(scalar(index))
	l, _ := list.([]any)
	if err != nil || i < 0 || i >= len(l) {
		return nil, fmt.Errorf("%w: %s %v: index out of range", ErrTemplate, fn, arg)
	}
	return l[i], nil
}

// fnSplit is Fn::Split [delimiter, text]: the list of text's parts
// between the delimiters.
func (r *resolver) fnSplit(fn string, arg any) (any, error) {
	sep, text, err := r.pair(fn, arg, "")
	if err != nil {
		return nil, err
	}
	var out []any
	for _, s := range strings.Split(scalar(text), scalar(sep)) {
		out = append(out, s)
	}
	return out, nil
}

// fnIf is Fn::If [condition, then, else]: then evaluated when the named
// condition holds, else else.
func (r *resolver) fnIf(fn string, arg any) (any, error) {
	l, _ := arg.([]any)
	if len(l) != 3 {
		return nil, fmt.Errorf("%w: %s %v", ErrTemplate, fn, arg)
	}
	ok, err := r.condition(scalar(l[0]))
	if err != nil {
		return nil, err
	}
	if ok {
		return r.eval(l[1])
	}
	return r.eval(l[2])
}

// fnCondition is Fn::Equals, Fn::Not, Fn::And or Fn::Or (boolean) as a
// value.
func (r *resolver) fnCondition(fn string, arg any) (any, error) {
	return r.boolean(map[string]any{fn: arg})
}

// condition evaluates the template's condition named name.
func (r *resolver) condition(name string) (bool, error) {
	c, ok := r.t.Conditions[name]
	if !ok {
		return false, fmt.Errorf("%w: no condition %s", ErrTemplate, name)
	}
	return r.boolean(c)
}

// boolean evaluates a condition: {"Condition": name}, Fn::Equals, Fn::Not,
// Fn::And or Fn::Or.
func (r *resolver) boolean(v any) (bool, error) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return false, fmt.Errorf("%w: condition %v", ErrTemplate, v)
	}
	for fn, arg := range m {
		switch fn {
		case "Condition":
			return r.condition(scalar(arg))
		case "Fn::Equals":
			return r.equals(arg)
		case "Fn::Not", "Fn::And", "Fn::Or":
			return r.logic(fn, arg)
		}
	}
	return false, fmt.Errorf("%w: condition %v", ErrTemplate, v)
}

// equals is Fn::Equals [a, b]: whether a and b, each evaluated, print the
// same.
func (r *resolver) equals(arg any) (bool, error) {
	l, _ := arg.([]any)
	if len(l) != 2 {
		return false, fmt.Errorf("%w: Fn::Equals %v", ErrTemplate, arg)
	}
	a, err := r.eval(l[0])
	if err != nil {
		return false, err
	}
	b, err := r.eval(l[1])
	if err != nil {
		return false, err
	}
	return fmt.Sprint(a) == fmt.Sprint(b), nil
}

// logic is Fn::Not (its one condition is false), Fn::And (every
// condition holds) or Fn::Or (one does) over the list of conditions arg,
// every one of which is evaluated.
func (r *resolver) logic(fn string, arg any) (bool, error) {
	l, _ := arg.([]any)
	all, some := true, false
	for _, x := range l {
		b, err := r.boolean(x)
		if err != nil {
			return false, err
		}
		all, some = all && b, some || b
	}
	switch fn {
	case "Fn::Not":
		return len(l) == 1 && !all, nil
	case "Fn::And":
		return all, nil
	}
	return some, nil
}

// sub expands ${Name} and ${Resource.Attribute} in text, a name of vars
// before the template's, a list joined with commas; ${!Literal} is
// ${Literal}.
func (r *resolver) sub(text string, vars map[string]any) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(text, "${")
		if i < 0 {
			b.WriteString(text)
			return b.String(), nil
		}
		b.WriteString(text[:i])
		j := strings.Index(text[i:], "}")
		if j < 0 {
			return "", fmt.Errorf("%w: Fn::Sub: unclosed ${ in %q", ErrTemplate, text)
		}
		name := text[i+2 : i+j]
		text = text[i+j+1:]
		if strings.HasPrefix(name, "!") {
			b.WriteString("${" + name[1:] + "}")
			continue
		}
		v, err := r.subValue(name, vars)
		if err != nil {
			return "", err
		}
		b.WriteString(v)
	}
}

// subValue is what ${name} of an Fn::Sub stands for: a variable of vars,
// else an attribute (Resource.Attribute) or a Ref; a list is joined with
// commas.
func (r *resolver) subValue(name string, vars map[string]any) (string, error) {
	var v any
	var err error
	if x, ok := vars[name]; ok {
		v = x
	} else if id, attr, ok := strings.Cut(name, "."); ok {
		v, err = r.getAtt(id, attr)
	} else {
		v, err = r.ref(name)
	}
	if err != nil {
		return "", err
	}
	if l, ok := v.([]any); ok {
		return join(l, ","), nil
	}
	return scalar(v), nil
}

// join is l's members as strings (scalar), separated by sep.
func join(l []any, sep string) string {
	s := make([]string, len(l))
	for i, x := range l {
		s[i] = scalar(x)
	}
	return strings.Join(s, sep)
}
