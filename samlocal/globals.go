package samlocal

import (
	"maps"
	"slices"
	"strings"
)

// overGlobals is a resource's properties (own) laid over those the
// template's Globals give every resource of its type (globals), as SAM
// lays them when it transforms the template, key by key:
//
//   - a key of only one side is kept as it is;
//   - a mapping on both sides is merged this same way, recursively, so
//     an API's Auth with Authorizers of its own keeps the Globals'
//     DefaultAuthorizer;
//   - a list on both sides is the Globals' members, then the resource's
//     (none dropped as a duplicate);
//   - any other value of the resource replaces the Globals' whole: a
//     string, number, boolean or null, and a value of another kind than
//     the Globals' (a list over a mapping, a string over a list).
//
// An intrinsic function (a mapping of the one key Ref, Condition or
// Fn::*: {"Ref": X}, {"Fn::Sub": S}, {"Fn::If": [...]}) is a value, not a
// mapping to merge, on either side, as SAM takes it: it stands for what
// it resolves to when the stack is created. So a resource's !If of two
// Tags mappings replaces the Globals' Tags whole, and a resource's !Ref
// replaces the Globals' !Sub; merged, either would be a mapping of two
// keys, no intrinsic function at all.
//
// The result shares the values of globals and own, and changes neither.
func overGlobals(globals, own map[string]any) map[string]any {
	out := make(map[string]any, len(globals)+len(own))
	maps.Copy(out, globals)
	for k, v := range own {
		out[k] = v
		switch v := v.(type) {
		case map[string]any:
			if g, ok := globals[k].(map[string]any); ok && !isIntrinsic(g) && !isIntrinsic(v) {
				out[k] = overGlobals(g, v)
			}
		case []any:
			if g, ok := globals[k].([]any); ok {
				out[k] = slices.Concat(g, v)
			}
		}
	}
	return out
}

// isIntrinsic is whether m is an intrinsic function: its one key is Ref,
// Condition or Fn::*.
func isIntrinsic(m map[string]any) bool {
	if len(m) != 1 {
		return false
	}
	for k := range m {
		return k == "Ref" || k == "Condition" || strings.HasPrefix(k, "Fn::")
	}
	return false
}
