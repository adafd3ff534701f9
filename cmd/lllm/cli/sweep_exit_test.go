package cli

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/runtime/provider/providertest"
	"github.com/lllm-go/lllm/sweep"
)

// A sweep whose samples failed on the provider prints its whole table, or
// its whole JSON, and exits 1 with one line saying how many samples did
// not finish and how to retry them; run again once the provider answers,
// it runs only those and exits 0. A dry run and sweep report exit 0 on the
// unfinished sweep: they describe it.
func TestSweepExitCodeWhenSamplesFailOnTheProvider(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	srv := providertest.NewOpenAIServer(t)
	srv.SetDefault(providertest.Reply{Status: http.StatusBadRequest, ErrorType: "invalid_request_error",
		ErrorMessage: "The server refuses (test)."})
	dir := t.TempDir()
	ctWrite(t, filepath.Join(dir, "chat.yaml"), fmt.Sprintf(`tactic_type: chat
global: {model_name: openai/local-model, base_url: %q, model_args: {temperature: 0}}
agent_configs: [{name: assistant, system_prompt: Answer in one word.}]
`, srv.BaseURL()))
	ctWrite(t, filepath.Join(dir, "rows.jsonl"), `{"id": "a", "input": "Say ok.", "expected": "ok"}
{"id": "b", "input": "Say ok again.", "expected": "ok"}
{"id": "c", "input": "And once more.", "expected": "ok"}
`)
	spec := filepath.Join(dir, "spec.yaml")
	ctWrite(t, spec, "name: flaky\nconfig: chat.yaml\ndataset: rows.jsonl\nscorers: [contains]\n")
	logDir := filepath.Join(dir, "logs")
	const wantLine = "lllm: 3 samples did not finish (they failed on the provider): run the same command again to retry them; it resumes, running only the unfinished samples"

	// Text: the table and the line counting what is done, on stdout; the
	// one error line on stderr; exit 1.
	r := lllm(t, "sweep", spec, "--log-dir", logDir)
	if r.code != ExitError || r.stderr != wantLine+"\n" {
		t.Fatalf("a sweep whose samples all failed on the provider:\n%v\nwant exit 1 and stderr %q", r, wantLine)
	}
	if !strings.Contains(r.stdout, "│ contains") || !strings.Contains(r.stdout, "0/3 samples done (3 more failed on the provider: the next run tries them again)") {
		t.Errorf("the table is not printed whole:\n%s", r.stdout)
	}

	// JSON: the whole report, valid, on stdout; the same line; exit 1.
	r = lllm(t, "sweep", spec, "--log-dir", logDir, "-o", "json")
	rep := decodeJSON[struct {
		Ran     int `json:"ran"`
		Done    int `json:"done"`
		ToRetry int `json:"to_retry"`
	}](t, r.stdout)
	if r.code != ExitError || r.stderr != wantLine+"\n" || rep.Ran != 3 || rep.Done != 0 || rep.ToRetry != 3 {
		t.Errorf("-o json: ran %d, done %d, to_retry %d; want 3, 0, 3\n%v", rep.Ran, rep.Done, rep.ToRetry, r)
	}

	// The dry run and the report describe the unfinished sweep: exit 0.
	if r := lllm(t, "sweep", spec, "--log-dir", logDir, "--dry-run"); r.code != 0 || !strings.Contains(r.stdout, "0 done, 3 to run") {
		t.Errorf("dry run:\n%v", r)
	}
	sweepDir := filepath.Join(logDir, "sweeps", "flaky")
	if r := lllm(t, "sweep", "report", sweepDir); r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "(3 more failed on the provider") {
		t.Errorf("report:\n%v", r)
	}

	// The provider answers again: the same command runs the 3 samples and
	// exits 0; once more, it runs nothing and exits 0.
	srv.SetDefault(providertest.Reply{Text: "ok", Usage: providertest.Usage{Input: 10, Output: 1}})
	for i, wantRan := range []int{3, 0} {
		r = lllm(t, "sweep", spec, "--log-dir", logDir, "-o", "json")
		rep = decodeJSON[struct {
			Ran     int `json:"ran"`
			Done    int `json:"done"`
			ToRetry int `json:"to_retry"`
		}](t, r.stdout)
		if r.code != 0 || r.stderr != "" || rep.Ran != wantRan || rep.Done != 3 || rep.ToRetry != 0 {
			t.Errorf("run %d after the provider recovered: ran %d, done %d, to_retry %d; want %d, 3, 0\n%v", i+1, rep.Ran, rep.Done, rep.ToRetry, wantRan, r)
		}
	}
}

// With --shard, only the shard's own samples decide the exit code: the
// shard that holds the failing sample exits 1, the other 0, even when the
// directory's report, which counts every shard, has a sample to retry.
func TestSweepExitCodeOfAShard(t *testing.T) {
	dir := t.TempDir()
	ctWrite(t, filepath.Join(dir, "chat.yaml"), `tactic_type: chat
global: {model_name: mock/demo}
agent_configs: [{name: assistant, system_prompt: Answer in one word.}]
mock:
  rules:
    - {match: Boom, reply: {error: bad_request}}
`)
	var rows strings.Builder
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		fmt.Fprintf(&rows, `{"id": %q, "input": "Say ok, %s.", "expected": "ok"}`+"\n", id, id)
	}
	rows.WriteString(`{"id": "boom", "input": "Boom.", "expected": "ok"}` + "\n")
	ctWrite(t, filepath.Join(dir, "rows.jsonl"), rows.String())
	spec := filepath.Join(dir, "spec.yaml")
	ctWrite(t, spec, "name: sharded\nconfig: chat.yaml\ndataset: rows.jsonl\nscorers: [contains]\n")
	logDir := filepath.Join(dir, "logs")

	// Which shard of 2 has the failing row.
	loaded, err := sweep.LoadSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	sw, err := sweep.New(context.Background(), loaded, sweep.Options{LogRoot: logDir})
	if err != nil {
		t.Fatal(err)
	}
	failing, passing := "0/2", "1/2"
	if !(sweep.Shard{Index: 0, Count: 2}).Has(sw.Cells[0].Hash, "boom", 0) {
		failing, passing = passing, failing
	}

	r := lllm(t, "sweep", spec, "--log-dir", logDir, "--shard", failing)
	want := "lllm: 1 sample of shard " + failing + " did not finish (it failed on the provider): run the same command again to retry it; it resumes, running only the unfinished samples\n"
	if r.code != ExitError || r.stderr != want {
		t.Errorf("the shard with the failing sample:\n%v\nwant exit 1 and stderr %q", r, want)
	}
	r = lllm(t, "sweep", spec, "--log-dir", logDir, "--shard", passing, "-o", "json")
	rep := decodeJSON[struct {
		Done    int `json:"done"`
		ToRetry int `json:"to_retry"`
	}](t, r.stdout)
	if r.code != 0 || r.stderr != "" || rep.Done != 6 || rep.ToRetry != 1 {
		t.Errorf("the other shard: done %d, to_retry %d (the whole directory's); want 6, 1, and exit 0\n%v", rep.Done, rep.ToRetry, r)
	}
}
