// Package problemtypetest checks that a package exporting the problem
// types names each entry of problemtype.All, and nothing else, from the
// table.
package problemtypetest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemkit/idemkit/internal/problemtype"
)

// Exports checks the Go files of dir (tests aside): every entry of
// problemtype.All is declared there as a constant Type<Name> =
// problemtype.<Name>, and every constant whose value is taken from the
// table has such a name.
func Exports(t testing.TB, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{} // constant name -> problemtype name
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok || len(vs.Names) != 1 || len(vs.Values) != 1 {
				return true
			}
			if sel, ok := vs.Values[0].(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "problemtype" {
					got[vs.Names[0].Name] = sel.Sel.Name
				}
			}
			return true
		})
	}
	for _, e := range problemtype.All {
		if got["Type"+e.Name] != e.Name {
			t.Errorf("%s does not declare Type%s = problemtype.%s", dir, e.Name, e.Name)
		}
		delete(got, "Type"+e.Name)
	}
	for c, v := range got {
		if strings.HasPrefix(c, "Type") {
			t.Errorf("%s declares %s = problemtype.%s, which is not an entry of problemtype.All", dir, c, v)
		}
	}
}
