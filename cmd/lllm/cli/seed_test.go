package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSeedFlagPointsToModelArgs: --seed, which a researcher tries first, is
// a usage error that says where a run's seed is, on every command with
// --set; elsewhere it is an unknown flag like any other.
func TestSeedFlagPointsToModelArgs(t *testing.T) {
	cfg, logDir := writeConfig(t, chatConfig)
	for _, args := range [][]string{
		{"run", cfg, "--task", "x", "--seed", "7"},
		{"run", cfg, "--task", "x", "--seed=7"},
		{"validate", cfg, "--seed", "7"},
		{"replay", "latest", "--log-dir", logDir, "--seed", "7"},
		{"sweep", cfg, "--seed", "7"},
	} {
		t.Run(label(args), func(t *testing.T) {
			wantError(t, lllm(t, args...), ExitUsage, "unknown flag: --seed", "--set global.model_args.seed=N")
		})
	}
	if r := lllm(t, "runs", "--log-dir", logDir, "--seed", "7"); r.code != ExitUsage || strings.Contains(r.stderr, "model_args") {
		t.Errorf("lllm runs --seed: want a plain unknown flag:\n%v", r)
	}
}

// TestSeedIsModelArgs checks what README says of a run's seed: --set
// global.model_args.seed=N changes the mock's default reply, is recorded in
// run_start's config and each model_call's params, and a replay reuses it
// (and diverges when it is changed).
func TestSeedIsModelArgs(t *testing.T) {
	cfg, logDir := writeConfig(t, "tactic_type: chat\nglobal: {model_name: mock/demo}\nagent_configs:\n  - name: assistant\n    system_prompt: You answer.\n")
	run := func(sets ...string) map[string]any {
		t.Helper()
		r := lllm(t, append([]string{"run", cfg, "--task", "Hello there", "--log-dir", logDir, "-o", "json"}, sets...)...)
		if r.code != 0 {
			t.Fatalf("lllm run %v:\n%v", sets, r)
		}
		return decodeJSON[map[string]any](t, r.stdout)
	}
	plain, seeded := run(), run("--set", "global.model_args.seed=7")
	if plain["result"] == seeded["result"] {
		t.Errorf("model_args.seed=7 left the mock's default reply as it was: %v", plain["result"])
	}

	id := seeded["run_id"].(string)
	f, err := os.Open(filepath.Join(logDir, id, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var starts, calls int
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var rec struct {
			Kind     string `json:"kind"`
			RunStart *struct {
				Seed   int64 `json:"seed"`
				Config struct {
					Global struct {
						ModelArgs map[string]any `json:"model_args"`
					} `json:"global"`
				} `json:"config"`
			} `json:"run_start"`
			ModelCall *struct {
				Params map[string]any `json:"params"`
			} `json:"model_call"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		switch rec.Kind {
		case "run_start":
			starts++
			if s := rec.RunStart; s.Config.Global.ModelArgs["seed"] != 7.0 || s.Seed != 0 {
				t.Errorf("run_start: config.global.model_args %v and seed %d, want model_args.seed 7 and no seed of its own", s.Config.Global.ModelArgs, s.Seed)
			}
		case "model_call":
			calls++
			if p := rec.ModelCall.Params; p["seed"] != 7.0 {
				t.Errorf("model_call params %v, want seed 7", p)
			}
		}
	}
	if starts != 1 || calls != 1 {
		t.Fatalf("the log has %d run_start and %d model_call records, want 1 and 1", starts, calls)
	}

	r := lllm(t, "replay", id, "--log-dir", logDir, "-o", "json")
	if got := decodeJSON[map[string]any](t, r.stdout); r.code != 0 || got["result"] != seeded["result"] {
		t.Errorf("the replay of the seeded run:\n%v", r)
	}
	if r := lllm(t, "replay", id, "--log-dir", logDir, "-o", "json", "--set", "global.model_args.seed=8"); r.code != ExitError {
		t.Errorf("a replay with another seed exits %d, want %d (diverged):\n%v", r.code, ExitError, r)
	}
}
