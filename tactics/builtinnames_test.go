package tactics

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// builtinNames, which the hint for an unknown tactic uses, lists exactly
// the tactics that tactics/builtin registers (read from its source: the
// test cannot import it without registering them here).
func TestBuiltinNamesMatchTheBuiltinPackage(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("builtin", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var registered []string
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
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Register" {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "tactics" {
				return true
			}
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				s, _ := strconv.Unquote(lit.Value)
				registered = append(registered, s)
			}
			return true
		})
	}
	slices.Sort(registered)
	if !slices.Equal(registered, builtinNames) {
		t.Errorf("tactics/builtin registers %q, builtinNames lists %q: update builtinNames in tactic.go", registered, builtinNames)
	}
}
