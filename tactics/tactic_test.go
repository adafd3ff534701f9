package tactics

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The error for a built-in tactic's name that is not registered (a
// program that does not import tactics/builtin) says how to register it;
// other names' errors are left as they are, and still match with errors.Is.
func TestBuiltinHint(t *testing.T) {
	base := errors.New(`unknown tactic "best_of_n": no tactics are registered`)
	err := builtinHint("best_of_n", base)
	if !errors.Is(err, base) || !strings.Contains(err.Error(), `import _ "github.com/lllm-go/lllm/tactics/builtin"`) {
		t.Errorf("best_of_n: %v", err)
	}
	other := errors.New(`unknown tactic "mine": no tactics are registered`)
	if err := builtinHint("mine", other); err != other {
		t.Errorf("mine: %v", err)
	}
	for _, name := range builtinNames {
		if _, err := New(name, nil); err != nil && !strings.Contains(err.Error(), "tactics/builtin") {
			t.Errorf("New(%q): %v", name, err)
		}
	}
}

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

// RegisterReplayOnly's panic for a nil factory names it, not Register.
func TestRegisterReplayOnlyNilNamesItself(t *testing.T) {
	defer func() {
		v := recover()
		if msg := fmt.Sprint(v); !strings.HasPrefix(msg, "tactics: RegisterReplayOnly ") {
			t.Errorf("panic %q, want one naming RegisterReplayOnly", msg)
		}
	}()
	RegisterReplayOnly("nil_factory_test", nil)
}
