package tactics

import (
	"errors"
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
