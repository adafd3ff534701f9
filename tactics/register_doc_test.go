package tactics_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/tactics"
)

// What README's "Your own tactics" says of tools and context managers: a
// tool is registered under the name the model calls it by, which takes no
// package; a context manager may carry one, a config names it bare, and
// its factory gets the config's map, type included.
func TestRegisteringToolsAndContextManagers(t *testing.T) {
	calc := func(ctx context.Context, in struct {
		Expression string `json:"expression"`
	}) (string, error) {
		return in.Expression, nil
	}
	if _, err := dialog.NewFunction("mylab:calc", "Evaluate an expression.", calc); err == nil {
		t.Error("a tool named mylab:calc was accepted; README says a tool's name carries no package")
	}
	tactics.RegisterTool(dialog.MustFunction("readme_calc", "Evaluate an expression.", calc))
	if f, err := tactics.LookupTool("readme_calc"); err != nil || f.Name != "readme_calc" {
		t.Fatalf("LookupTool(readme_calc) = %v, %v", f, err)
	}

	var got map[string]any
	stop := errors.New("stop")
	contextmgr.Register("readmelab:lastturns", func(cfg map[string]any) (contextmgr.Manager, error) {
		got = cfg
		return nil, stop
	})
	_, err := contextmgr.New(map[string]any{"type": "lastturns", "n": 6})
	if !errors.Is(err, stop) || !strings.Contains(err.Error(), "readmelab:lastturns") {
		t.Fatalf("New({type: lastturns}) = %v; want the factory of readmelab:lastturns", err)
	}
	if got["type"] != "lastturns" || got["n"] != 6 {
		t.Errorf("the factory got %v; want the config's map, type included", got)
	}
}
