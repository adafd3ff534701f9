package tactics_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/tactics"
)

// counting wraps a model and counts its calls.
type counting struct {
	provider.Model
	n *atomic.Int32
}

func (c counting) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	c.n.Add(1)
	return c.Model.Generate(ctx, req)
}

// RunOptions.Models opens every agent's model: here it wraps the model
// provider.Open gives, and a failure of its own is a config error.
func TestRunOptionsModels(t *testing.T) {
	cfg := batchConfig(t, "0s", 1)
	var calls atomic.Int32
	var agents []string
	res, err := tactics.Run(t.Context(), cfg, "echo 0!", tactics.RunOptions{LogDir: t.TempDir(),
		Models: func(ctx context.Context, ac config.Agent, pc provider.Config) (provider.Model, error) {
			agents = append(agents, ac.Name+"="+ac.ModelName)
			m, err := provider.Open(ctx, ac.ModelName, pc)
			return counting{m, &calls}, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Result) != `"0"` || calls.Load() != 1 || strings.Join(agents, ",") != "assistant=mock/demo" {
		t.Fatalf("result %s, %d calls through the hook, agents %v", res.Result, calls.Load(), agents)
	}
}

// lab:shout is a tactic of another package, named by its bare path or
// qualified in tactic_type.
type shout struct{}

func (shout) Agents() []string { return []string{"assistant"} }
func (shout) Call(ctx context.Context, s *tactics.Session, task string) (any, error) {
	return strings.ToUpper(task), nil
}

func init() {
	tactics.Register("lab:shout", func(map[string]any) (tactics.Tactic, error) { return shout{}, nil })
}

func TestPackageQualifiedTactic(t *testing.T) {
	for _, name := range []string{"shout", "lab:shout"} {
		cfg := batchConfig(t, "0s", 0)
		if err := cfg.Set("tactic_type", name); err != nil {
			t.Fatal(err)
		}
		res, err := tactics.Run(t.Context(), cfg, "hi", tactics.RunOptions{LogDir: t.TempDir()})
		if err != nil || string(res.Result) != `"HI"` {
			t.Fatalf("tactic_type %s: %v %+v", name, err, res)
		}
	}
	cfg := batchConfig(t, "0s", 0)
	_ = cfg.Set("tactic_type", "lab:shuot")
	_, err := tactics.Run(t.Context(), cfg, "hi", tactics.RunOptions{LogDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), `unknown tactic "lab:shuot" (did you mean "lab:shout"?)`) {
		t.Fatalf("typo: %v", err)
	}
}

// Agents builds a config's agents without a tactic, with Run's meaning of
// every key, and reports every problem at once.
func TestAgents(t *testing.T) {
	cfg := batchConfig(t, "0s", 1)
	_ = cfg.Set("agent_configs.assistant.model_args.temperature", "0.3")
	_ = cfg.Set("agent_configs.assistant.max_interrupt_steps", "2")
	makers, err := tactics.Agents(t.Context(), cfg, tactics.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := makers["assistant"]()
	if len(makers) != 1 || a.Name != "assistant" || a.ModelName != "mock/demo" || a.Model == nil ||
		*a.Params.Temperature != 0.3 || a.Limits.MaxInterruptSteps != 2 || a.System == nil {
		t.Fatalf("agent %+v", a)
	}
	if err := a.Open("main", nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Receive("echo 0!"); err != nil {
		t.Fatal(err)
	}
	if reply, _, err := a.Respond(t.Context()); err != nil || reply.Text() != "0" {
		t.Fatalf("reply %v, %v", reply, err)
	}
	_ = cfg.Set("agent_configs.assistant.model_name", "nosuch/model")
	_, err = tactics.Agents(t.Context(), cfg, tactics.RunOptions{})
	var ce *tactics.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("bad config: %v", err)
	}
}

// lab:panics answers once, through the builtin chat, then panics.
type panics struct{}

func (panics) Agents() []string { return []string{"assistant"} }
func (panics) Call(ctx context.Context, s *tactics.Session, task string) (any, error) {
	if _, err := s.Sub(ctx, "chat", nil, task); err != nil {
		return nil, err
	}
	panic("the tactic has a bug")
}

func init() {
	tactics.Register("lab:panics", func(map[string]any) (tactics.Tactic, error) { return panics{}, nil })
}

// A tactic that panics ends its run as failed, with the panic and its
// stack in the result and the log, and everything it did before in the
// log.
func TestPanickingTacticFinishesItsLog(t *testing.T) {
	cfg := batchConfig(t, "0s", 1)
	if err := cfg.Set("tactic_type", "lab:panics"); err != nil {
		t.Fatal(err)
	}
	res, err := tactics.Run(t.Context(), cfg, "echo 0!", tactics.RunOptions{LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != logs.StatusFailed || !strings.Contains(res.Error, "tactic lab:panics panicked: the tactic has a bug") ||
		!strings.Contains(res.Error, "models_test.go") {
		t.Fatalf("status %s, error %q", res.Status, res.Error)
	}
	sums, err := logs.List(filepath.Dir(res.Dir))
	if err != nil || len(sums) != 1 {
		t.Fatalf("runs: %v %v", sums, err)
	}
	if sum := sums[0]; sum.Status() != logs.StatusFailed || sum.End.Totals.ModelCalls != 1 || !strings.Contains(sum.End.Error, "panicked") {
		t.Fatalf("log summary: status %s, end %+v", sum.Status(), sum.End)
	}
}

// nilMap panics in its own code, on the runtime's nil-map check.
type nilMap struct{ counts map[string]int }

func (nilMap) Agents() []string { return []string{"assistant"} }
func (t nilMap) Call(context.Context, *tactics.Session, string) (any, error) {
	t.counts["x"]++
	return t.counts, nil
}

func init() {
	tactics.Register("lab:nilmap", func(map[string]any) (tactics.Tactic, error) { return nilMap{}, nil })
}

// The first line of a panicking tactic's error says what panicked and
// where, outside the runtime's frames; the stack follows.
func TestPanicSiteOnFirstLine(t *testing.T) {
	cfg := batchConfig(t, "0s", 1)
	if err := cfg.Set("tactic_type", "lab:nilmap"); err != nil {
		t.Fatal(err)
	}
	res, err := tactics.Run(t.Context(), cfg, "x", tactics.RunOptions{LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	first, stack, _ := strings.Cut(res.Error, "\n")
	if res.Status != logs.StatusFailed ||
		!strings.HasPrefix(first, "tactic lab:nilmap panicked: assignment to entry in nil map (at ") ||
		!strings.Contains(first, "nilMap.Call, ") || !strings.Contains(first, "models_test.go:") ||
		!strings.Contains(stack, "goroutine ") {
		t.Fatalf("status %s, error %q", res.Status, res.Error)
	}
}
