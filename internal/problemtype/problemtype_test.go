package problemtype_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/idemkit/idemkit/internal/problemtype"
)

// TestAllListsEveryType: All holds each constant of the table once, under
// its own name, with a status of a client or server error.
func TestAllListsEveryType(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "problemtype.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Values) == 1 {
			if b, ok := vs.Values[0].(*ast.BinaryExpr); ok {
				if x, ok := b.X.(*ast.Ident); ok && x.Name == "Base" {
					declared[vs.Names[0].Name] = true
				}
			}
		}
		return true
	})
	seen := map[string]bool{}
	for _, e := range problemtype.All {
		switch {
		case !declared[e.Name]:
			t.Errorf("All has %s, which is not a constant of the table", e.Name)
		case seen[e.Type]:
			t.Errorf("All lists %s twice", e.Type)
		case !strings.HasPrefix(e.Type, problemtype.Base):
			t.Errorf("%s: type %q is not under Base", e.Name, e.Type)
		case e.Status < 400 || e.Status > 599:
			t.Errorf("%s: status %d is not an error status", e.Name, e.Status)
		}
		seen[e.Type] = true
	}
	if len(problemtype.All) != len(declared) {
		t.Errorf("All has %d entries; the table declares %d types", len(problemtype.All), len(declared))
	}
}
