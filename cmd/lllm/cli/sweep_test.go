package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
)

const exampleSweep = "../../../configs/sweep-example.yaml"

// sweepJSON is the part of lllm sweep -o json the tests read.
type sweepJSON struct {
	Cells []struct {
		Hash     string         `json:"hash"`
		Settings map[string]any `json:"settings"`
		N        int            `json:"n"`
		Errors   int            `json:"errors"`
		Scores   []struct {
			Name   string  `json:"name"`
			Mean   float64 `json:"mean"`
			StdErr float64 `json:"stderr"`
		} `json:"scores"`
		PassAtK map[string]float64 `json:"pass_at_k"`
		Cost    dialog.Cost        `json:"cost"`
	} `json:"cells"`
	Calls     int `json:"calls"`
	CacheHits int `json:"cache_hits"`
	Done      int `json:"done"`
	Samples   int `json:"samples"`
}

func TestSweepExample(t *testing.T) {
	logDir := t.TempDir()
	r := lllm(t, "sweep", exampleSweep, "--log-dir", logDir, "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "4 cells, 80 samples, 0 done, 80 to run, about 80 model calls") {
		t.Fatalf("dry run:\n%v", r)
	}
	if _, err := os.Stat(filepath.Join(logDir, "sweeps")); !os.IsNotExist(err) {
		t.Errorf("--dry-run wrote to the log root: %v", err)
	}

	r = lllm(t, "sweep", exampleSweep, "--log-dir", logDir, "-o", "json")
	if r.code != 0 {
		t.Fatalf("sweep:\n%v", r)
	}
	first := decodeJSON[sweepJSON](t, r.stdout)
	if len(first.Cells) != 4 || first.Calls != 80 || first.Done != 80 {
		t.Fatalf("first run: %d cells, calls %d, done %d", len(first.Cells), first.Calls, first.Done)
	}
	for _, c := range first.Cells {
		want := 1.0
		if c.Settings["global.model_name"] == "mock/sloppy" {
			want = 0.6
		}
		if c.N != 20 || c.Errors != 0 || c.Scores[0].Name != "numeric" || c.Scores[0].Mean != want {
			t.Errorf("cell %v: n %d errors %d scores %+v, want numeric %v", c.Settings["global.model_name"], c.N, c.Errors, c.Scores, want)
		}
	}

	// Again: nothing left to run, no model call.
	r = lllm(t, "sweep", exampleSweep, "--log-dir", logDir, "-o", "json")
	again := decodeJSON[sweepJSON](t, r.stdout)
	if r.code != 0 || again.Calls != 0 || len(again.Cells) != 4 || again.Done != 80 {
		t.Errorf("second run: exit %d, calls %d, cells %d, done %d", r.code, again.Calls, len(again.Cells), again.Done)
	}

	// The table from disk, in every format.
	dir := filepath.Join(logDir, "sweeps", "example")
	r = lllm(t, "sweep", "report", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "mock/sloppy") || !strings.Contains(r.stdout, "0.600 ± 0.112") || !strings.Contains(r.stdout, "pass@2") {
		t.Errorf("report:\n%v", r)
	}
	r = lllm(t, "sweep", "report", dir, "-o", "csv")
	if r.code != 0 || strings.Count(r.stdout, "\n") != 5 || !strings.HasPrefix(r.stdout, "temperature,model_name,rules,n,numeric,mentions,pass@1,pass@2,") {
		t.Errorf("report csv:\n%v", r)
	}
	r = lllm(t, "sweep", "report", dir, "-o", "markdown")
	if r.code != 0 || !strings.Contains(r.stdout, "| temperature |") {
		t.Errorf("report markdown:\n%v", r)
	}
	r = lllm(t, "sweep", "report", dir, "-o", "json")
	if rep := decodeJSON[sweepJSON](t, r.stdout); len(rep.Cells) != 4 || rep.Calls != 0 {
		t.Errorf("report json: %+v", rep)
	}
}

func TestSweepBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("chat.yaml", "tactic_type: chat\nglobal: {model_name: mock/m}\nagent_configs: [{name: assistant, system_prompt: Hi.}]\n")
	write("rows.jsonl", `{"id": 1, "input": "a", "expected": "b"}`+"\n"+`{"input": "no id"}`+"\n")
	write("good.jsonl", `{"id": 1, "input": "a", "expected": "b"}`+"\n")
	logDir := filepath.Join(dir, "logs")
	for _, c := range []struct {
		spec string
		subs []string
	}{
		{"config: chat.yaml\ndataset: rows.jsonl\n", []string{"rows.jsonl:2:", `no "id"`}},
		{"config: chat.yaml\ndataset: good.jsonl\nscorers: [exactt]\n", []string{`unknown scorer "exactt"`, `did you mean "exact"?`}},
		{"config: chat.yaml\ndataset: good.jsonl\naxes:\n  global.model_nme: [mock/a]\n", []string{"global.model_nme", `did you mean "global.model_name"?`}},
		{"config: chat.yaml\ndataset: good.jsonl\nconcurency: 3\n", []string{`unknown key "concurency"`, `did you mean "concurrency"?`}},
		{"config: missing.yaml\ndataset: good.jsonl\n", []string{"missing.yaml"}},
	} {
		spec := write("sweep.yaml", c.spec)
		r := lllm(t, "sweep", spec, "--log-dir", logDir)
		// A config problem: exit 2, each problem on an "lllm: " line.
		if r.code != ExitUsage || r.stdout != "" || !strings.HasPrefix(r.stderr, "lllm: ") {
			t.Errorf("spec %q:\n%v", c.spec, r)
		}
		for _, sub := range c.subs {
			if !strings.Contains(r.stderr, sub) {
				t.Errorf("spec %q: stderr does not mention %q:\n%s", c.spec, sub, r.stderr)
			}
		}
	}
	if _, err := os.Stat(logDir); !os.IsNotExist(err) {
		t.Errorf("a bad sweep wrote to the log root: %v", err)
	}
	spec := write("sweep.yaml", "config: chat.yaml\ndataset: good.jsonl\n")
	wantError(t, lllm(t, "sweep", spec, "--shard", "3/3"), ExitUsage, "--shard", "0 to N-1")
	wantError(t, lllm(t, "sweep"), ExitUsage, "SWEEP.yaml")
	wantError(t, lllm(t, "sweep", "report", filepath.Join(dir, "nope")), ExitError, "not a sweep directory")
}

// TestSweepHelperProcess is not a test: the tests below run the test binary
// as an lllm process through it.
func TestSweepHelperProcess(t *testing.T) {
	if os.Getenv("LLLM_SWEEP_HELPER") != "1" {
		t.Skip("a helper for the subprocess tests")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(Execute(context.Background(), args, os.Stdout, os.Stderr))
}

func lllmProcess(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestSweepHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "LLLM_SWEEP_HELPER=1")
	return cmd
}

// slowSweep writes a sweep of 2 cells x 12 rows x 2 repeats on a mock with
// latency, and returns its path.
func slowSweep(t *testing.T, latency string) string {
	dir := t.TempDir()
	var rows strings.Builder
	for i := range 12 {
		fmt.Fprintf(&rows, `{"id": "r%d", "input": "What is %d + 1?", "expected": %d}`+"\n", i, i, i+1)
	}
	files := map[string]string{
		"chat.yaml": "tactic_type: chat\nglobal: {model_name: mock/m, model_args: {temperature: 0}}\n" +
			"agent_configs: [{name: assistant, system_prompt: Add.}]\nmock: {latency: " + latency + "}\n",
		"rows.jsonl": rows.String(),
		"sweep.yaml": "config: chat.yaml\ndataset: rows.jsonl\nrepeats: 2\nconcurrency: 4\nscorers: [numeric]\n" +
			"axes:\n  agent_configs.assistant.model_args.max_tokens: [10, 20]\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "sweep.yaml")
}

// TestSweepShardProcesses runs a sweep as three shard processes on one
// directory at once, merges them, and compares with one process.
func TestSweepShardProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs subprocesses")
	}
	spec := slowSweep(t, "5ms")
	whole := lllm(t, "sweep", spec, "--log-dir", t.TempDir(), "-o", "json")
	if whole.code != 0 {
		t.Fatalf("whole:\n%v", whole)
	}
	logDir := t.TempDir()
	var procs []*exec.Cmd
	var outs []*bytes.Buffer
	for i := range 3 {
		cmd := lllmProcess("sweep", spec, "--log-dir", logDir, "--shard", fmt.Sprintf("%d/3", i), "-o", "json")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs, outs = append(procs, cmd), append(outs, &out)
	}
	calls := 0
	for i, p := range procs {
		if err := p.Wait(); err != nil {
			t.Fatalf("shard %d: %v\n%s", i, err, outs[i])
		}
		calls += decodeJSON[sweepJSON](t, outs[i].String()).Calls
	}
	if calls != 48 {
		t.Errorf("the shards made %d calls together, want 48", calls)
	}
	merged := lllm(t, "sweep", "merge", filepath.Join(logDir, "sweeps", "sweep"), "-o", "json")
	if merged.code != 0 {
		t.Fatalf("merge:\n%v", merged)
	}
	w, m := decodeJSON[sweepJSON](t, whole.stdout), decodeJSON[sweepJSON](t, merged.stdout)
	w.Calls, m.Calls = 0, 0
	wj, _ := json.Marshal(w)
	mj, _ := json.Marshal(m)
	if !bytes.Equal(wj, mj) {
		t.Errorf("merged shards differ from one process:\n%s\n%s", mj, wj)
	}
}

// TestSweepSIGKILL kills a sweep process at a random moment, then resumes
// it: every sample ends up recorded exactly once.
func TestSweepSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs subprocesses")
	}
	spec := slowSweep(t, "30ms")
	logDir := t.TempDir()
	samples := filepath.Join(logDir, "sweeps", "sweep", "samples.jsonl")
	for round, after := range []int{3, 17} {
		cmd := lllmProcess("sweep", spec, "--log-dir", logDir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for countLines(samples) < after && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		if n := countLines(samples); n >= 48 {
			t.Fatalf("round %d: the sweep finished (%d lines) before it was killed", round, n)
		}
	}
	r := lllm(t, "sweep", spec, "--log-dir", logDir, "-o", "json")
	if r.code != 0 {
		t.Fatalf("resume:\n%v", r)
	}
	rep := decodeJSON[sweepJSON](t, r.stdout)
	if rep.Done != 48 || rep.Calls == 0 || rep.Calls >= 48 {
		t.Errorf("resumed: done %d, calls %d", rep.Done, rep.Calls)
	}
	seen := map[string]int{}
	f, err := os.Open(samples)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Cell, Row string
			Repeat    int
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue // a torn line from the kill
		}
		seen[fmt.Sprint(rec.Cell, rec.Row, rec.Repeat)]++
	}
	if len(seen) != 48 {
		t.Errorf("%d samples recorded, want 48", len(seen))
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("sample %s recorded %d times", k, n)
		}
	}
	for _, c := range rep.Cells {
		if c.N != 24 || c.Errors != 0 {
			t.Errorf("cell %+v", c)
		}
	}
}

func countLines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("\n"))
}
