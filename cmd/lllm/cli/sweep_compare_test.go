package cli

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/internal/vocab"
)

// compareJSON is the part of a compared sweep report's -o json the tests
// read.
type compareJSON struct {
	Baseline *string `json:"baseline"`
	Cells    []struct {
		Hash       string                     `json:"hash"`
		Settings   map[string]any             `json:"settings"`
		VsBaseline map[string]*map[string]any `json:"vs_baseline"`
	} `json:"cells"`
}

// The example sweep compared with its careful cell at temperature 0: the
// sloppy cells are worse on 4 of the 10 rows on both scorers (the table's
// -0.400 ± 0.163 *), the careful cell at temperature 0.7 is the same.
func TestSweepBaseline(t *testing.T) {
	logDir := t.TempDir()
	r := lllm(t, "sweep", exampleSweep, "--log-dir", logDir, "--baseline", "temperature=0,model_name=mock/careful")
	if r.code != 0 {
		t.Fatalf("sweep --baseline:\n%v", r)
	}
	dir := filepath.Join(logDir, "sweeps", "example")
	text := r.stdout
	for _, want := range []string{"│ Δ numeric ", "│ Δ mentions ", "│ Δ rows ", "│ -0.400 ± 0.163 * │", "│ +0.000 ± 0.000   │",
		"\nΔ: paired difference from the baseline cell ", "(temperature=0 model_name=mock/careful rules=#1)",
		"standard error", "* when its 95% confidence interval", "80/80 samples done"} {
		if !strings.Contains(text, want) {
			t.Errorf("sweep --baseline text has no %q:\n%s", want, text)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "│ 0           │ mock/careful │") && strings.Count(line, "│ -  ") != 3 {
			t.Errorf("the baseline's row has not \"-\" in its two Δ columns and Δ rows: %q", line)
		}
	}

	// JSON, by a repeated flag: the baseline's hash, every other cell's
	// paired differences.
	r = lllm(t, "sweep", "report", dir, "--baseline", "temperature=0", "--baseline", "global.model_name=mock/careful", "-o", "json")
	if r.code != 0 {
		t.Fatalf("sweep report --baseline -o json:\n%v", r)
	}
	rep := decodeJSON[compareJSON](t, r.stdout)
	var base string
	for _, c := range rep.Cells {
		if c.Settings["global.model_args.temperature"] == 0.0 && c.Settings["global.model_name"] == "mock/careful" {
			base = c.Hash
		}
	}
	if base == "" || rep.Baseline == nil || *rep.Baseline != base {
		t.Fatalf("baseline %v, want the hash of the careful cell at temperature 0 (%q)", rep.Baseline, base)
	}
	if !strings.Contains(text, "baseline cell "+base+" (") {
		t.Errorf("the text's note does not name the baseline %s", base)
	}
	// Sloppy − careful per row: -1 on 4 rows, 0 on 6: mean -0.4, sd
	// √(2.4/9), stderr sd/√10, t(0.975, 9) = 2.2622.
	se := math.Sqrt(2.4/9) / math.Sqrt(10)
	for _, c := range rep.Cells {
		if c.Hash == base {
			if c.VsBaseline != nil {
				t.Errorf("the baseline has vs_baseline %v", c.VsBaseline)
			}
			continue
		}
		for _, scorer := range []string{"numeric", "mentions"} {
			p := c.VsBaseline[scorer]
			if p == nil {
				t.Errorf("cell %v has no vs_baseline.%s: %v", c.Settings, scorer, c.VsBaseline)
				continue
			}
			v := *p
			delta, stderr, half, sig := -0.4, se, 2.262157162798205*se, true
			if c.Settings["global.model_name"] == "mock/careful" {
				delta, stderr, half, sig = 0, 0, 0, false
			}
			num := func(k string) float64 { f, _ := v[k].(float64); return f }
			if v["rows"] != 10.0 || v["significant"] != sig || math.Abs(num("delta")-delta) > 1e-12 || math.Abs(num("stderr")-stderr) > 1e-12 ||
				math.Abs(num("ci_low")-(delta-half)) > 1e-9 || math.Abs(num("ci_high")-(delta+half)) > 1e-9 {
				t.Errorf("cell %v vs_baseline.%s = %v, want delta %v stderr %v CI ±%v rows 10 significant %v", c.Settings["global.model_name"], scorer, v, delta, stderr, half, sig)
			}
		}
	}
	if bad := vocab.Problems(decodeJSON[any](t, r.stdout), false); len(bad) > 0 {
		t.Errorf("sweep report --baseline -o json departs from the run log's vocabulary:\n%s", strings.Join(bad, "\n"))
	}

	// By a prefix of the hash, as markdown: the note under the table.
	r = lllm(t, "sweep", "report", dir, "--baseline", base[:5], "-o", "markdown")
	if r.code != 0 || !strings.Contains(r.stdout, "| Δ numeric") || !strings.Contains(r.stdout, "\n\nΔ: paired difference from the baseline cell "+base) {
		t.Errorf("sweep report --baseline HASH -o markdown:\n%v", r)
	}
	// Without --baseline, nothing of it.
	r = lllm(t, "sweep", "report", dir, "-o", "json")
	plain := decodeJSON[compareJSON](t, r.stdout)
	if plain.Baseline != nil || strings.Contains(r.stdout, "vs_baseline") {
		t.Errorf("sweep report -o json without --baseline has a baseline:\n%s", r.stdout)
	}
	if r = lllm(t, "sweep", "report", dir); strings.Contains(r.stdout, "Δ") {
		t.Errorf("sweep report without --baseline has Δ:\n%s", r.stdout)
	}
}

// A --baseline that names no cell or several is a usage error listing the
// cells; lllm sweep finds it before it runs or writes anything.
func TestSweepBaselineUsageErrors(t *testing.T) {
	logDir := t.TempDir()
	if r := lllm(t, "sweep", exampleSweep, "--log-dir", logDir, "-o", "json"); r.code != 0 {
		t.Fatalf("sweep:\n%v", r)
	}
	dir := filepath.Join(logDir, "sweeps", "example")
	cells := []string{"(temperature=0 model_name=mock/careful rules=#1)", "(temperature=0 model_name=mock/sloppy rules=#2)",
		"(temperature=0.7 model_name=mock/careful rules=#1)", "(temperature=0.7 model_name=mock/sloppy rules=#2)"}
	for _, c := range []struct {
		baseline []string
		want     []string
	}{
		{[]string{"model_name=mock/nope"}, append([]string{"--baseline model_name=mock/nope: no cell has model_name=mock/nope"}, cells...)},
		{[]string{"model_name=mock/careful"}, []string{"2 cells have model_name=mock/careful", cells[0], cells[2], "prefix of one's hash"}},
		{[]string{"temperature=0", "zzzz"}, []string{"no cell has temperature=0,zzzz"}},
		{[]string{"model=mock/careful"}, []string{`no axis "model"`, "model_name (global.model_name)"}},
		{[]string{","}, append([]string{"no cell named", "AXIS=VALUE"}, cells...)},
	} {
		args := []string{"sweep", "report", dir}
		for _, b := range c.baseline {
			args = append(args, "--baseline", b)
		}
		wantError(t, lllm(t, args...), ExitUsage, c.want...)
	}

	// lllm sweep checks it first: nothing runs, nothing is written.
	fresh := t.TempDir()
	for _, extra := range [][]string{nil, {"--dry-run"}, {"-o", "json"}} {
		args := append([]string{"sweep", exampleSweep, "--log-dir", fresh, "--baseline", "model_name=mock/careful"}, extra...)
		wantError(t, lllm(t, args...), ExitUsage, "2 cells have model_name=mock/careful", cells[0], cells[2])
	}
	if entries, err := os.ReadDir(fresh); err != nil || len(entries) != 0 {
		t.Errorf("a sweep with a bad --baseline wrote %v (%v)", entries, err)
	}
}
