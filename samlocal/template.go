package samlocal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
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
		t.Resources[id] = Resource{Type: typ, Properties: props, Metadata: meta}
	}
	return t, nil
}

// nodeValue turns a YAML node into maps, slices and scalars, a short-form
// intrinsic (!Ref X) into its long form ({"Ref": X}).
func nodeValue(n *yaml.Node) (any, error) {
	var v any
	switch n.Kind {
	case yaml.AliasNode:
		return nodeValue(n.Alias)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			val, err := nodeValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = val
		}
		v = m
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			val, err := nodeValue(c)
			if err != nil {
				return nil, err
			}
			s = append(s, val)
		}
		v = s
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!int", "!!float":
			v = n.Value // CloudFormation values are strings
		case "!!bool":
			b, _ := strconv.ParseBool(n.Value)
			v = b
		case "!!null":
			v = nil
		default:
			v = n.Value
		}
	}
	if !strings.HasPrefix(n.Tag, "!") || strings.HasPrefix(n.Tag, "!!") {
		return v, nil
	}
	name := n.Tag[1:]
	switch name {
	case "Ref", "Condition":
		return map[string]any{name: v}, nil
	case "GetAtt":
		if s, ok := v.(string); ok {
			id, attr, _ := strings.Cut(s, ".")
			v = []any{id, attr}
		}
	}
	return map[string]any{"Fn::" + name: v}, nil
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
		for _, x := range v {
			y, err := r.eval(x)
			if err != nil {
				return nil, err
			}
			if y == noValue {
				continue
			}
			out = append(out, y)
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
		for k, x := range v {
			y, err := r.eval(x)
			if err != nil {
				return nil, err
			}
			if y == noValue {
				continue
			}
			out[k] = y
		}
		return out, nil
	}
	return v, nil
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

func (r *resolver) ref(name string) (any, error) {
	switch name {
	case "AWS::Region":
		return r.region, nil
	case "AWS::AccountId":
		return AccountID, nil
	case "AWS::StackName":
		return r.stack, nil
	case "AWS::StackId":
		return "arn:aws:cloudformation:" + r.region + ":" + AccountID + ":stack/" + r.stack + "/local", nil
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
	res, ok := r.t.Resources[name]
	if !ok {
		return nil, fmt.Errorf("%w: Ref %s: no such parameter or resource", ErrTemplate, name)
	}
	if n, ok := r.names[name]; ok {
		return n, nil
	}
	if res.Type == "AWS::SQS::Queue" {
		// No queue runs locally: a queue's URL is empty, so a function
		// that sends when it has one sends nothing (docs/DEPLOY.md).
		return "", nil
	}
	return name, nil
}

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
	switch {
	case res.Type == "AWS::SQS::Queue" && attr == "QueueUrl":
		return "", nil
	case res.Type == "AWS::SQS::Queue" && attr == "QueueName":
		return id, nil
	case res.Type == "AWS::SQS::Queue" && attr == "Arn":
		return "arn:aws:sqs:" + r.region + ":" + AccountID + ":" + id, nil
	case attr == "Arn" && (res.Type == "AWS::DynamoDB::Table" || res.Type == "AWS::Serverless::SimpleTable"):
		return "arn:aws:dynamodb:" + r.region + ":" + AccountID + ":table/" + n, nil
	case attr == "StreamArn":
		return "arn:aws:dynamodb:" + r.region + ":" + AccountID + ":table/" + n + "/stream/local", nil
	case attr == "Arn" && res.Type == "AWS::Serverless::Function":
		return "arn:aws:lambda:" + r.region + ":" + AccountID + ":function:" + n, nil
	case attr == "Arn":
		svc := strings.ToLower(strings.TrimPrefix(strings.SplitN(strings.TrimPrefix(res.Type, "AWS::"), "::", 2)[0], "Serverless"))
		return "arn:aws:" + svc + ":" + r.region + ":" + AccountID + ":" + n, nil
	}
	return n, nil
}

func (r *resolver) intrinsic(fn string, arg any) (any, error) {
	switch fn {
	case "Ref":
		name, err := r.str(arg)
		if err != nil {
			return nil, err
		}
		return r.ref(name)
	case "Fn::GetAtt":
		a, err := r.eval(arg)
		if err != nil {
			return nil, err
		}
		l, _ := a.([]any)
		if len(l) != 2 {
			return nil, fmt.Errorf("%w: Fn::GetAtt %v: want [resource, attribute]", ErrTemplate, arg)
		}
		return r.getAtt(scalar(l[0]), scalar(l[1]))
	case "Fn::Sub":
		var text string
		vars := map[string]any{}
		switch a := arg.(type) {
		case string:
			text = a
		case []any:
			if len(a) != 2 {
				return nil, fmt.Errorf("%w: Fn::Sub %v", ErrTemplate, arg)
			}
			text = scalar(a[0])
			m, _ := a[1].(map[string]any)
			for k, x := range m {
				y, err := r.eval(x)
				if err != nil {
					return nil, err
				}
				vars[k] = y
			}
		default:
			return nil, fmt.Errorf("%w: Fn::Sub %v", ErrTemplate, arg)
		}
		return r.sub(text, vars)
	case "Fn::Join":
		a, err := r.eval(arg)
		if err != nil {
			return nil, err
		}
		l, _ := a.([]any)
		if len(l) != 2 {
			return nil, fmt.Errorf("%w: Fn::Join %v", ErrTemplate, arg)
		}
		parts, _ := l[1].([]any)
		s := make([]string, len(parts))
		for i, p := range parts {
			s[i] = scalar(p)
		}
		return strings.Join(s, scalar(l[0])), nil
	case "Fn::Select":
		a, err := r.eval(arg)
		if err != nil {
			return nil, err
		}
		l, _ := a.([]any)
		if len(l) != 2 {
			return nil, fmt.Errorf("%w: Fn::Select %v", ErrTemplate, arg)
		}
		i, err := strconv.Atoi(scalar(l[0]))
		list, _ := l[1].([]any)
		if err != nil || i < 0 || i >= len(list) {
			return nil, fmt.Errorf("%w: Fn::Select %v: index out of range", ErrTemplate, arg)
		}
		return list[i], nil
	case "Fn::Split":
		a, err := r.eval(arg)
		if err != nil {
			return nil, err
		}
		l, _ := a.([]any)
		if len(l) != 2 {
			return nil, fmt.Errorf("%w: Fn::Split %v", ErrTemplate, arg)
		}
		var out []any
		for _, s := range strings.Split(scalar(l[1]), scalar(l[0])) {
			out = append(out, s)
		}
		return out, nil
	case "Fn::If":
		l, _ := arg.([]any)
		if len(l) != 3 {
			return nil, fmt.Errorf("%w: Fn::If %v", ErrTemplate, arg)
		}
		ok, err := r.condition(scalar(l[0]))
		if err != nil {
			return nil, err
		}
		if ok {
			return r.eval(l[1])
		}
		return r.eval(l[2])
	case "Fn::Equals", "Fn::Not", "Fn::And", "Fn::Or":
		return r.boolean(map[string]any{fn: arg})
	}
	return nil, fmt.Errorf("%w: %s is not supported locally", ErrTemplate, fn)
}

func (r *resolver) condition(name string) (bool, error) {
	c, ok := r.t.Conditions[name]
	if !ok {
		return false, fmt.Errorf("%w: no condition %s", ErrTemplate, name)
	}
	return r.boolean(c)
}

func (r *resolver) boolean(v any) (bool, error) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return false, fmt.Errorf("%w: condition %v", ErrTemplate, v)
	}
	for fn, arg := range m {
		l, _ := arg.([]any)
		switch fn {
		case "Condition":
			return r.condition(scalar(arg))
		case "Fn::Equals":
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
		case "Fn::Not", "Fn::And", "Fn::Or":
			all, any := true, false
			for _, x := range l {
				b, err := r.boolean(x)
				if err != nil {
					return false, err
				}
				all, any = all && b, any || b
			}
			switch fn {
			case "Fn::Not":
				return len(l) == 1 && !all, nil
			case "Fn::And":
				return all, nil
			}
			return any, nil
		}
	}
	return false, fmt.Errorf("%w: condition %v", ErrTemplate, v)
}

// sub expands ${Name} and ${Resource.Attribute} in text; ${!Literal} is
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
			s := make([]string, len(l))
			for i, x := range l {
				s[i] = scalar(x)
			}
			v = strings.Join(s, ",")
		}
		b.WriteString(scalar(v))
	}
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
