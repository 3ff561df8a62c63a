package httpproblem_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"

	"github.com/idemkit/idemkit/httpproblem"
)

// TestTypesListsEveryType: Types holds each constant of the table once,
// with a status of a client or server error.
func TestTypesListsEveryType(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "httpproblem.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]string{} // type URI -> constant name
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Values) == 1 {
			if b, ok := vs.Values[0].(*ast.BinaryExpr); ok {
				x, okX := b.X.(*ast.Ident)
				y, okY := b.Y.(*ast.BasicLit)
				if okX && okY && x.Name == "Base" {
					s, err := strconv.Unquote(y.Value)
					if err != nil {
						t.Fatal(err)
					}
					declared[httpproblem.Base+s] = vs.Names[0].Name
				}
			}
		}
		return true
	})
	seen := map[string]bool{}
	for _, e := range httpproblem.Types() {
		switch {
		case declared[e.Type] == "":
			t.Errorf("Types has %s, which is not a constant of the table", e.Type)
		case seen[e.Type]:
			t.Errorf("Types lists %s twice", e.Type)
		case !strings.HasPrefix(e.Type, httpproblem.Base):
			t.Errorf("type %q is not under Base", e.Type)
		case e.Status < 400 || e.Status > 599:
			t.Errorf("%s: status %d is not an error status", declared[e.Type], e.Status)
		}
		seen[e.Type] = true
	}
	if len(httpproblem.Types()) != len(declared) {
		t.Errorf("Types has %d entries; the table declares %d types", len(httpproblem.Types()), len(declared))
	}
}
