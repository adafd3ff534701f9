package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// servedRun is one run of lllm runs -o json, as these tests read it.
type servedRun struct {
	ID     string            `json:"run_id"`
	Tactic string            `json:"tactic"`
	Status string            `json:"status"`
	Labels map[string]string `json:"labels"`
	Totals *struct {
		ModelCalls int `json:"model_calls"`
		ToolCalls  int `json:"tool_calls"`
		Cost       struct {
			InputTokens int `json:"input_tokens"`
		} `json:"cost"`
	} `json:"totals"`
}

// servedRuns lists the runs under root with lllm runs -o json.
func servedRuns(t *testing.T, root string) []servedRun {
	t.Helper()
	r := lllm(t, "runs", "--log-dir", root, "-o", "json")
	if r.code != 0 {
		t.Fatalf("lllm runs: %v", r)
	}
	var runs []servedRun
	if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil {
		t.Fatalf("lllm runs -o json: %v\n%s", err, r.stdout)
	}
	return runs
}

// TestServeWritesRunLogs: lllm serve logs each turn under DATA_DIR/runs
// by default, where lllm runs and lllm tree find it, with the tool call
// the agent made.
func TestServeWritesRunLogs(t *testing.T) {
	data := t.TempDir()
	url, stop := serveInProcess(t, "--config", "../../../configs/serve.yaml", "--data-dir", data)
	// configs/serve.yaml: "remember" makes the assistant call recall.
	code, cout, cerr := chatRun(t, "do you remember?\n", "assistant", "--sender", "alice", "--addr", url)
	if code != 0 || !strings.Contains(cout, "[tool recall") {
		t.Fatalf("chat: %d %q %q", code, cout, cerr)
	}
	root := filepath.Join(data, "runs")
	// Listed while the server still runs: the turn's log is finished.
	runs := servedRuns(t, root)
	if len(runs) != 1 {
		t.Fatalf("%d runs under %s, want 1: %+v", len(runs), root, runs)
	}
	r := runs[0]
	if r.Tactic != "conversation" || r.Status != "ok" || r.Labels["conversation"] != "assistant/alice" || r.Labels["agent"] != "assistant" {
		t.Fatalf("run %+v", r)
	}
	if r.Totals == nil || r.Totals.ModelCalls != 2 || r.Totals.ToolCalls != 1 || r.Totals.Cost.InputTokens == 0 {
		t.Fatalf("totals %+v", r.Totals)
	}
	tree := lllm(t, "tree", r.ID, "--log-dir", root)
	if tree.code != 0 || !strings.Contains(tree.stdout, "owner=assistant alias=conversation#1") {
		t.Fatalf("lllm tree: %v", tree)
	}
	show := lllm(t, "show", r.ID, "--log-dir", root)
	if show.code != 0 || !strings.Contains(show.stdout, "do you remember?") || !strings.Contains(show.stdout, "recall") {
		t.Fatalf("lllm show: %v", show)
	}
	code, out := stop()
	if code != 0 || !strings.Contains(out, "run logs: "+root) {
		t.Fatalf("serve exit %d: %q", code, out)
	}
}

// TestServeRunLogRoots: --log-dir and the config's log_dir choose the
// root, --no-log writes none, and contradictory or empty flags are usage
// errors.
func TestServeRunLogRoots(t *testing.T) {
	dir := t.TempDir()
	cfgLogs := filepath.Join(dir, "from-config")
	cfg := filepath.Join(dir, "serve.yaml")
	body := "tactic_type: serve\nlog_dir: " + cfgLogs + "\nglobal: {model_name: mock/x}\nagent_configs:\n  - {name: a, system_prompt: Hi.}\n"
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	turn := func(t *testing.T, args ...string) string {
		t.Helper()
		data := t.TempDir()
		url, stop := serveInProcess(t, append([]string{"--config", cfg, "--data-dir", data}, args...)...)
		if code, cout, cerr := chatRun(t, "hello\n", "a", "--addr", url); code != 0 {
			t.Fatalf("chat: %d %q %q", code, cout, cerr)
		}
		if code, out := stop(); code != 0 {
			t.Fatalf("serve exit %d: %q", code, out)
		}
		return data
	}

	t.Run("config log_dir", func(t *testing.T) {
		data := turn(t)
		if runs := servedRuns(t, cfgLogs); len(runs) != 1 || runs[0].Labels["conversation"] != "a/user" {
			t.Fatalf("runs under the config's log_dir: %+v", runs)
		}
		if _, err := os.Stat(filepath.Join(data, "runs")); !os.IsNotExist(err) {
			t.Fatalf("DATA_DIR/runs exists: %v", err)
		}
	})
	t.Run("--log-dir wins", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "chosen")
		turn(t, "--log-dir", root)
		if runs := servedRuns(t, root); len(runs) != 1 || runs[0].Status != "ok" {
			t.Fatalf("runs under --log-dir: %+v", runs)
		}
	})
	t.Run("--no-log", func(t *testing.T) {
		before := servedRuns(t, cfgLogs)
		data := turn(t, "--no-log")
		if after := servedRuns(t, cfgLogs); len(after) != len(before) {
			t.Fatalf("--no-log wrote a run: %d runs, then %d", len(before), len(after))
		}
		ents, _ := os.ReadDir(data)
		for _, e := range ents {
			if e.Name() == "runs" {
				t.Fatalf("--no-log made %s", filepath.Join(data, "runs"))
			}
		}
	})
	t.Run("help", func(t *testing.T) {
		// The root's --log-dir defaults to ./logs; serve's does not.
		r := lllm(t, "serve", "--help")
		i := strings.Index(r.stdout, "--log-dir DIR")
		line, _, _ := strings.Cut(r.stdout[max(i, 0):], "\n")
		if r.code != 0 || i < 0 || strings.Contains(line, `(default "logs")`) || !strings.Contains(line, "else DATA_DIR/runs") {
			t.Fatalf("serve --help says of --log-dir: %q", line)
		}
	})
	t.Run("usage errors", func(t *testing.T) {
		r := lllm(t, "serve", "--config", cfg, "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-log", "--log-dir", dir)
		wantError(t, r, ExitUsage, "--no-log and --log-dir", "contradict")
		r = lllm(t, "serve", "--config", cfg, "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--log-dir", "")
		wantError(t, r, ExitUsage, "--log-dir is empty", "--no-log")
	})
	t.Run("an agent named runs", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "serve.yaml")
		body := "tactic_type: serve\nglobal: {model_name: mock/x}\nagent_configs:\n  - {name: runs, system_prompt: Hi.}\n"
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		r := lllm(t, "serve", "--config", cfg, "--addr", "127.0.0.1:0", "--data-dir", t.TempDir())
		wantError(t, r, ExitUsage, `the agent "runs" would share`, "--log-dir DIR")
	})
}
