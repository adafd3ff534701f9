package cli

// Crash tests: a real `lllm run` process is killed (SIGKILL) or
// interrupted (SIGINT) at chosen moments, and the log it leaves behind is
// checked against what docs/log-format.md promises: append-only, whole
// records or nothing, readable after a crash. Every model call goes to a
// fake OpenAI-wire server on 127.0.0.1 (runtime/provider/providertest),
// whose delayed replies hold the run at the moment a test wants.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// crashHold is how long a held reply waits: far longer than any test runs.
const crashHold = time.Minute

// crashSettle is how long a test lets a run go on once it reached the moment
// wanted, before it kills it: longer than the 10ms in which the log's
// writer hands queued records to the OS (docs/log-format.md,
// "Durability"), so that what was written before the moment is on disk.
const crashSettle = 100 * time.Millisecond

// Configs of the crash tests; BASE_URL is the fake server's.
const (
	crashChat = `tactic_type: chat
global:
  model_name: openai/gpt-4o-mini
  base_url: BASE_URL
agent_configs:
  - name: assistant
    system_prompt: You are concise.
`
	crashRefine = `tactic_type: self_refine
params: {iterations: 1}
global:
  model_name: openai/gpt-4o-mini
  base_url: BASE_URL
agent_configs:
  - name: solver
    system_prompt: You write short poems.
  - name: critic
    system_prompt: You are a demanding poetry editor.
`
	crashReact = `tactic_type: react
params:
  max_steps: 4
  tools: [calculator, word_count]
global:
  model_name: openai/gpt-4o-mini
  base_url: BASE_URL
agent_configs:
  - name: agent
    system_prompt: You use tools for arithmetic.
`
)

// crashReply is a text reply with its usage.
func crashReply(text string, in, out int) providertest.Reply {
	return providertest.Reply{Text: text, Usage: providertest.Usage{Input: in, Output: out}}
}

// crashHeld is r, held back by the server for crashHold.
func crashHeld(r providertest.Reply) providertest.Reply {
	r.Delay = crashHold
	return r
}

// crashEnv is the environment of the lllm processes: this one's without
// provider settings, so that nothing reaches a real provider.
func crashEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "LLLM_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// crashProc is a running lllm process.
type crashProc struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	exited         chan struct{}
	err            error // how it exited, once exited is closed
}

// startCrashLLLM starts bin with args in dir.
func startCrashLLLM(t *testing.T, bin, dir string, args ...string) *crashProc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, crashEnv()
	p := &crashProc{cmd: cmd, stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

func (p *crashProc) done() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// signal sends sig to the process and waits for it to exit; it returns
// the exit code (-1 when a signal ended it).
func (p *crashProc) signal(t *testing.T, sig os.Signal) int {
	t.Helper()
	if p.done() {
		t.Fatalf("lllm exited before it got %v: %v\nstdout:\n%s\nstderr:\n%s", sig, p.err, p.stdout, p.stderr)
	}
	// The process may end between the check above and the signal: then
	// it ended on its own, and its exit is what the caller sees.
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("lllm did not exit within 10s of %v\nstderr:\n%s", sig, p.stderr)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

// kill SIGKILLs the process and checks that the signal is what ended it.
func (p *crashProc) kill(t *testing.T) {
	t.Helper()
	if code := p.signal(t, syscall.SIGKILL); code != -1 {
		t.Fatalf("lllm exited with %d, not by the SIGKILL: it was not running any more\nstderr:\n%s", code, p.stderr)
	}
}

// crashUntil polls cond every millisecond until it holds, for up to 15s; it
// fails the test if p exits or time runs out first.
func crashUntil(t *testing.T, p *crashProc, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if p.done() {
			t.Fatalf("lllm exited before %s: %v\nstdout:\n%s\nstderr:\n%s", what, p.err, p.stdout, p.stderr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s\nstderr:\n%s", what, p.stderr)
		}
		time.Sleep(time.Millisecond)
	}
}

// crashRunDirs lists the run directories under root, in start order: not the
// hidden ".tmp-" directories a run is made in before it appears.
func crashRunDirs(root string) []string {
	events, _ := filepath.Glob(filepath.Join(root, "*", logs.EventsFile))
	var dirs []string
	for _, e := range events {
		if d := filepath.Dir(e); !strings.HasPrefix(filepath.Base(d), ".") {
			dirs = append(dirs, d)
		}
	}
	slices.Sort(dirs)
	return dirs
}

// crashCount is how many times s occurs in the logs under root.
func crashCount(root, s string) int {
	n := 0
	for _, d := range crashRunDirs(root) {
		b, _ := os.ReadFile(filepath.Join(d, logs.EventsFile))
		n += bytes.Count(b, []byte(s))
	}
	return n
}

// crashCLI runs bin with args in dir and returns what it did.
func crashCLI(t *testing.T, bin, dir string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, crashEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		if ctx.Err() != nil {
			t.Fatalf("lllm %s did not finish within 30s\nstderr:\n%s", strings.Join(args, " "), errb.String())
		}
		return result{ee.ExitCode(), out.String(), errb.String()}
	case err != nil:
		t.Fatal(err)
	}
	return result{0, out.String(), errb.String()}
}

// crashPanicSigns are what a Go panic or crash prints.
var crashPanicSigns = []string{"panic:", "goroutine ", "runtime error", "internal error", "[signal ", ".go:"}

// crashRetryNote is the line lllm run writes before it makes a failed call
// again.
var crashRetryNote = regexp.MustCompile(`^lllm: agent \S+: attempt \d+ failed: .*; trying again`)

// wantCrashCalm checks that a command exited with one of codes, printed no
// panic or stack trace, wrote only "lllm: " lines to stderr (and the two
// plain notes of runs and tree/show on an empty result), and, when it
// failed, said why in exactly one line besides warnings and notes.
func wantCrashCalm(t *testing.T, r result, what string, codes ...int) {
	t.Helper()
	if !slices.Contains(codes, r.code) {
		t.Errorf("%s: exit %d, want one of %v\n%v", what, r.code, codes, r)
	}
	for _, s := range crashPanicSigns {
		if strings.Contains(r.stderr, s) || strings.Contains(r.stdout, s) && s != ".go:" {
			t.Errorf("%s: the output shows a panic or a stack trace (%q):\n%v", what, s, r)
		}
	}
	var errs []string
	for _, l := range strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n") {
		switch {
		case l == "":
		case strings.HasPrefix(l, "no runs under "), strings.HasPrefix(l, "run ") && strings.HasSuffix(l, " has no dialogs"):
		case !strings.HasPrefix(l, "lllm: "):
			t.Errorf("%s: a stderr line is not an \"lllm: \" line: %q", what, l)
		case strings.HasPrefix(l, "lllm: warning: "), strings.Contains(l, " was interrupted: "), strings.Contains(l, " is still running: "),
			crashRetryNote.MatchString(l):
		default:
			errs = append(errs, l)
		}
	}
	if r.code != 0 && len(errs) != 1 {
		t.Errorf("%s failed (exit %d) with %d error lines, want one:\n%s", what, r.code, len(errs), r.stderr)
	}
}

// crashLog is what a run log holds, read line by line with no help from
// the logs package's reader.
type crashLog struct {
	path    string
	records []*logs.Record
	torn    []byte // the bytes after the last newline, if any
	dialogs map[string]*crashDialog
	order   []string // dialog ids in the order they appeared
	kinds   map[logs.Kind]int
	calls   dialog.Cost // the sum of the model_call records
	end     *logs.RunEnd
}

type crashDialog struct {
	parent   string
	messages int
}

// readCrashLog reads the log at path and checks, as it goes, that every
// record is whole JSON in the documented shape, that sequence numbers run
// 1, 2, 3, ... and times never go back, and that the records build a tree:
// no fork of a missing parent, no message of a missing dialog or out of
// its place.
func readCrashLog(t *testing.T, path string) *crashLog {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := &crashLog{path: path, dialogs: map[string]*crashDialog{}, kinds: map[logs.Kind]int{}}
	lines := bytes.Split(data, []byte("\n"))
	f.torn = lines[len(lines)-1]
	lines = lines[:len(lines)-1]
	var last time.Time
	for i, line := range lines {
		n := i + 1
		if !json.Valid(line) {
			t.Errorf("%s:%d is not a whole JSON record (only the last line may be torn): %.200q", path, n, line)
			continue
		}
		rec := new(logs.Record)
		if err := json.Unmarshal(line, rec); err != nil {
			t.Errorf("%s:%d: %v", path, n, err)
			continue
		}
		f.records = append(f.records, rec)
		if rec.Seq != int64(n) {
			t.Errorf("%s:%d has seq %d: sequence numbers must be 1, 2, 3, ... in file order", path, n, rec.Seq)
		}
		if rec.Time.Before(last) {
			t.Errorf("%s:%d: ts %v is before the previous record's %v", path, n, rec.Time, last)
		}
		last = rec.Time
		f.kinds[rec.Kind]++
		if (n == 1) != (rec.Kind == logs.KindRunStart) {
			t.Errorf("%s:%d is a %s record: the first record, and only it, is run_start", path, n, rec.Kind)
		}
		if f.end != nil {
			t.Errorf("%s:%d: a %s record after run_end", path, n, rec.Kind)
		}
		switch rec.Kind {
		case logs.KindRunStart:
			if rec.RunStart == nil || rec.RunStart.Format != logs.FormatName {
				t.Errorf("%s:%d: run_start without its payload or format", path, n)
			}
		case logs.KindRunEnd:
			f.end = rec.RunEnd
		case logs.KindDialogOpen, logs.KindFork:
			node := rec.DialogOpen
			if rec.Kind == logs.KindFork {
				node = rec.Fork
			}
			if node == nil || node.ID == "" || node.ID != rec.Dialog {
				t.Errorf("%s:%d: %s record without its node", path, n, rec.Kind)
				continue
			}
			if f.dialogs[node.ID] != nil {
				t.Errorf("%s:%d: dialog %s opened twice", path, n, node.ID)
			}
			d := &crashDialog{parent: node.ParentID}
			if rec.Kind == logs.KindFork {
				p := f.dialogs[node.ParentID]
				if p == nil {
					t.Errorf("%s:%d: dialog %s is forked from %s, which the log does not hold before it", path, n, node.ID, node.ParentID)
				} else if node.ParentLen > p.messages {
					t.Errorf("%s:%d: dialog %s forked at %d messages of %s, which has %d", path, n, node.ID, node.ParentLen, node.ParentID, p.messages)
				}
				d.messages = node.SplitPoint
			}
			f.dialogs[node.ID] = d
			f.order = append(f.order, node.ID)
		case logs.KindMessage:
			d := f.dialogs[rec.Dialog]
			switch {
			case rec.Message == nil:
				t.Errorf("%s:%d: message record without its message", path, n)
			case d == nil:
				t.Errorf("%s:%d: a message of dialog %q, which the log does not hold before it", path, n, rec.Dialog)
			case rec.Index != d.messages:
				t.Errorf("%s:%d: message %d of dialog %s, which has %d", path, n, rec.Index, rec.Dialog, d.messages)
			default:
				d.messages++
			}
		case logs.KindModelCall:
			mc := rec.ModelCall
			if mc == nil {
				t.Errorf("%s:%d: model_call record without its payload", path, n)
				continue
			}
			if f.dialogs[rec.Dialog] == nil {
				t.Errorf("%s:%d: a model call on dialog %q, which the log does not hold before it", path, n, rec.Dialog)
			}
			f.calls = f.calls.Add(dialog.Cost{Usage: mc.Usage, USD: mc.USD})
		case logs.KindToolCall:
			if rec.ToolCall == nil {
				t.Errorf("%s:%d: tool_call record without its payload", path, n)
			}
		}
	}
	return f
}

// messages is how many message records the log holds.
func (f *crashLog) messages() int { return f.kinds[logs.KindMessage] }

// crashCostNear reports whether two costs are equal, dollars to rounding.
func crashCostNear(a, b dialog.Cost) bool {
	return a.Usage == b.Usage && math.Abs(a.USD-b.USD) <= 1e-9*math.Max(1, math.Abs(b.USD))
}

// crashSnapshot is every file under dir with its size, time and checksum.
func crashSnapshot(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %v %d %v", p, info.Mode(), info.Size(), info.ModTime().UnixNano())
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			line += " " + hex.EncodeToString(sum[:])
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// crashTreeNode is a dialog of lllm tree -o json.
type crashTreeNode struct {
	ID       string           `json:"id"`
	ParentID string           `json:"parent_id"`
	Messages int              `json:"messages"`
	Calls    int              `json:"model_calls"`
	CallCost dialog.Cost      `json:"call_cost"`
	Children []*crashTreeNode `json:"children"`
}

// crashRunsEntry is a run of lllm runs -o json.
type crashRunsEntry struct {
	ID     string       `json:"run_id"`
	Status string       `json:"status"`
	Tactic string       `json:"tactic"`
	Totals *logs.Totals `json:"totals"`
	Error  string       `json:"error"`
}

func crashFindRun(t *testing.T, r result, id string) *crashRunsEntry {
	t.Helper()
	var list []*crashRunsEntry
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("lllm runs -o json: not JSON: %v\n%v", err, r)
	}
	for _, e := range list {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("lllm runs -o json does not list run %s:\n%s", id, r.stdout)
	return nil
}

// crashCheckInterrupted checks the log a killed run left in dir, through the
// file itself and through every command that reads it: runs, tree, show
// and replay, in text and JSON. It returns what the log holds.
func crashCheckInterrupted(t *testing.T, bin, logDir, dir string) *crashLog {
	t.Helper()
	id := filepath.Base(dir)
	cwd := filepath.Dir(logDir) // not logDir, where a run id would name a directory
	f := readCrashLog(t, filepath.Join(dir, logs.EventsFile))
	if f.end != nil {
		t.Fatalf("run %s has a run_end after a SIGKILL: it was not killed mid-run", id)
	}
	if len(f.records) == 0 {
		t.Fatalf("the log of run %s holds no whole record: its run_start is written and fsynced before the run directory appears", id)
	}
	torn := len(f.torn) > 0
	t.Logf("run %s was killed with %d whole records %v and %d torn bytes", id, len(f.records), f.kinds, len(f.torn))
	at := func(args ...string) []string { return append(args, "--log-dir", logDir) }

	// lllm runs: the run is listed as interrupted, since no process holds
	// its lock; totals, if shown for a run without run_end, are the sum of
	// its model calls.
	for _, format := range []string{"table", "json"} {
		r := crashCLI(t, bin, cwd, at("runs", "-o", format)...)
		wantCrashCalm(t, r, "runs -o "+format, 0)
		if format == "table" {
			row := ""
			for _, l := range strings.Split(r.stdout, "\n") {
				if strings.HasPrefix(l, id+" ") {
					row = l
				}
			}
			if fs := strings.Fields(row); len(fs) < 3 || fs[2] != string(logs.StatusInterrupted) {
				t.Errorf("lllm runs: the row of run %s is %q, want status interrupted\n%s", id, row, r.stdout)
			}
			continue
		}
		e := crashFindRun(t, r, id)
		if e.Status != string(logs.StatusInterrupted) || e.Error != "" {
			t.Errorf("lllm runs -o json: run %s is %+v, want status interrupted", id, e)
		}
		if e.Totals != nil && (e.Totals.ModelCalls != f.kinds[logs.KindModelCall] || !crashCostNear(e.Totals.Cost, f.calls)) {
			t.Errorf("lllm runs -o json: run %s shows totals %+v; its log holds %d model calls costing %+v", id, *e.Totals, f.kinds[logs.KindModelCall], f.calls)
		}
	}

	// lllm tree: the whole tree, said to be interrupted, a torn last line
	// skipped with a warning.
	wantNotes := func(r result, what string) {
		t.Helper()
		if !strings.Contains(r.stderr, "run "+id+" was interrupted") {
			t.Errorf("%s does not say that run %s was interrupted:\n%s", what, id, r.stderr)
		}
		if torn && (!strings.Contains(r.stderr, "lllm: warning: "+f.path) || !strings.Contains(r.stderr, "torn")) {
			t.Errorf("%s: no warning about the torn last line of %s:\n%s", what, f.path, r.stderr)
		}
	}
	r := crashCLI(t, bin, cwd, at("tree", id)...)
	wantCrashCalm(t, r, "tree", 0)
	wantNotes(r, "lllm tree")
	if n := strings.Count(r.stdout, "\n"); n != len(f.order) {
		t.Errorf("lllm tree prints %d dialogs; the log holds %d:\n%s", n, len(f.order), r.stdout)
	}
	r = crashCLI(t, bin, cwd, at("tree", id, "-o", "json")...)
	wantCrashCalm(t, r, "tree -o json", 0)
	wantNotes(r, "lllm tree -o json")
	var tree struct {
		RunID   string           `json:"run_id"`
		Dialogs []*crashTreeNode `json:"dialogs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &tree); err != nil {
		t.Fatalf("lllm tree -o json: not JSON: %v\n%s", err, r.stdout)
	}
	seen := map[string]bool{}
	var calls int
	var cost dialog.Cost
	var visit func(n *crashTreeNode, parent string)
	visit = func(n *crashTreeNode, parent string) {
		seen[n.ID] = true
		d := f.dialogs[n.ID]
		switch {
		case d == nil:
			t.Errorf("lllm tree -o json shows dialog %s, which the log does not hold", n.ID)
		case d.parent != parent || n.ParentID != parent:
			t.Errorf("lllm tree -o json: dialog %s is under %q (parent_id %q); the log forks it from %q", n.ID, parent, n.ParentID, d.parent)
		case d.messages != n.Messages:
			t.Errorf("lllm tree -o json: dialog %s has %d messages; the log gives it %d", n.ID, n.Messages, d.messages)
		}
		calls += n.Calls
		cost = cost.Add(n.CallCost)
		for _, c := range n.Children {
			visit(c, n.ID)
		}
	}
	for _, n := range tree.Dialogs {
		visit(n, "")
	}
	if tree.RunID != id || len(seen) != len(f.order) {
		t.Errorf("lllm tree -o json: run %q with %d dialogs; the log of run %s holds %d", tree.RunID, len(seen), id, len(f.order))
	}
	if calls != f.kinds[logs.KindModelCall] || !crashCostNear(cost, f.calls) {
		t.Errorf("lllm tree -o json: %d model calls costing %+v; the log holds %d costing %+v", calls, cost, f.kinds[logs.KindModelCall], f.calls)
	}

	for _, format := range []string{"dot", "mermaid"} {
		r := crashCLI(t, bin, cwd, at("tree", id, "-o", format)...)
		wantCrashCalm(t, r, "tree -o "+format, 0)
		wantNotes(r, "lllm tree -o "+format)
		if !strings.Contains(r.stdout, map[string]string{"dot": "digraph", "mermaid": "flowchart"}[format]) {
			t.Errorf("lllm tree -o %s:\n%s", format, r.stdout)
		}
	}

	// lllm show: every dialog's transcript, whole, and the last one alone.
	r = crashCLI(t, bin, cwd, at("show", id)...)
	wantCrashCalm(t, r, "show", 0)
	wantNotes(r, "lllm show")
	if n := strings.Count(r.stdout, "── dialog "); n != len(f.order) {
		t.Errorf("lllm show prints %d transcripts; the log holds %d dialogs", n, len(f.order))
	}
	if len(f.order) > 0 {
		last := f.order[len(f.order)-1]
		r := crashCLI(t, bin, cwd, at("show", id, last[:8])...)
		wantCrashCalm(t, r, "show RUN DIALOG", 0)
		wantNotes(r, "lllm show RUN DIALOG")
		if !strings.HasPrefix(r.stdout, "── dialog "+last[:8]+" ") || strings.Count(r.stdout, "\n") < 1+f.dialogs[last].messages {
			t.Errorf("lllm show %s %s prints:\n%s\nwant its %d messages", id, last[:8], r.stdout, f.dialogs[last].messages)
		}
	}
	r = crashCLI(t, bin, cwd, at("show", id, "-o", "json")...)
	wantCrashCalm(t, r, "show -o json", 0)
	wantNotes(r, "lllm show -o json")
	var shown []struct {
		Node     dialog.TreeNode   `json:"node"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil {
		t.Fatalf("lllm show -o json: not JSON: %v\n%s", err, r.stdout)
	}
	if len(shown) != len(f.order) {
		t.Errorf("lllm show -o json: %d dialogs; the log holds %d", len(shown), len(f.order))
	}
	for _, s := range shown {
		if d := f.dialogs[s.Node.ID]; d == nil || d.messages != len(s.Messages) || d.parent != s.Node.ParentID {
			t.Errorf("lllm show -o json: dialog %s (parent %q) has %d messages; the log says %+v", s.Node.ID, s.Node.ParentID, len(s.Messages), d)
		}
	}

	// lllm replay: the recording ends before the run did, so the replay
	// diverges where it ends and says why (docs/replay.md): exit 1. Only
	// a run killed after its last model call replays whole: exit 0.
	r = crashCLI(t, bin, cwd, at("replay", id)...)
	wantCrashCalm(t, r, "replay", 0, 1)
	if torn && (!strings.Contains(r.stderr, "lllm: warning: "+f.path) || !strings.Contains(r.stderr, "torn")) {
		t.Errorf("lllm replay: no warning about the torn last line of %s:\n%s", f.path, r.stderr)
	}
	if r.code != 0 && !strings.Contains(r.stdout, "no run_end") {
		t.Errorf("lllm replay of an interrupted run does not say its recording has no run_end:\n%v", r)
	}
	r = crashCLI(t, bin, cwd, at("replay", id, "-o", "json")...)
	wantCrashCalm(t, r, "replay -o json", 0, 1)
	var rep struct {
		ReplayOf   string `json:"replay_of"`
		Calls      int    `json:"calls"`
		Recorded   int    `json:"recorded"`
		Divergence *struct {
			Reason string `json:"reason"`
		} `json:"divergence"`
	}
	switch err := json.Unmarshal([]byte(r.stdout), &rep); {
	case err != nil:
		t.Errorf("lllm replay -o json: not JSON: %v\n%v", err, r)
	case rep.ReplayOf != id || rep.Recorded != f.kinds[logs.KindModelCall]:
		t.Errorf("lllm replay -o json: a replay of %q with %d recorded calls; the log of run %s holds %d:\n%s", rep.ReplayOf, rep.Recorded, id, f.kinds[logs.KindModelCall], r.stdout)
	case r.code == 0 && (rep.Divergence != nil || rep.Calls != rep.Recorded):
		t.Errorf("lllm replay -o json: exit 0 but %s", r.stdout)
	case r.code != 0 && (rep.Divergence == nil || !strings.Contains(rep.Divergence.Reason, "no run_end")):
		t.Errorf("lllm replay -o json: a divergence that does not say the recording has no run_end: %s", r.stdout)
	}
	return f
}

// crashCase is one moment to kill a run at.
type crashCase struct {
	name    string
	config  string
	replies []providertest.Reply
	// tasks are the tasks to run: one is --task, more a --tasks file run
	// two at a time.
	tasks []string
	// moment waits until the run is where the case kills it.
	moment func(t *testing.T, p *crashProc, srv *providertest.Server, logDir string)
	// check checks more of the logs left; killed are the run directories
	// without run_end.
	check func(t *testing.T, killed []*crashLog, all []string)
	// again answers the second run; nil means replies without delays.
	again []providertest.Reply
}

// TestCrashSIGKILL kills `lllm run` at several moments of a run and
// checks the log left behind, then runs again into the same log root.
func TestCrashSIGKILL(t *testing.T) {
	bin := buildLLLM(t)
	toolCalls := providertest.Reply{
		ToolCalls: []providertest.ToolCall{
			{ID: "call_calc", Name: "calculator", Arguments: `{"expression": "(17 + 25) * 3"}`},
			{ID: "call_wc", Name: "word_count", Arguments: `{"text": "one two three"}`},
		},
		Usage: providertest.Usage{Input: 120, Output: 30},
	}
	cases := []crashCase{{
		name:    "before the first model call",
		config:  crashChat,
		replies: []providertest.Reply{crashHeld(crashReply("Paris.", 40, 3))},
		tasks:   []string{"Capital of France?"},
		moment: func(t *testing.T, p *crashProc, srv *providertest.Server, logDir string) {
			// As soon as the run directory appears: it appears whole, with
			// its run_start, and the first call comes after the agent has
			// counted its prompt's tokens.
			crashUntil(t, p, "the run directory appears", func() bool { return len(crashRunDirs(logDir)) > 0 })
			if n := len(srv.Requests()); n > 0 {
				t.Logf("the model was called before the kill (%d requests): this case ran as a kill during the first call", n)
			}
		},
		check: func(t *testing.T, killed []*crashLog, _ []string) {
			if n := killed[0].kinds[logs.KindModelCall]; n != 0 {
				t.Errorf("%d model_call records before the first model call", n)
			}
		},
	}, {
		name:    "during a slow model call",
		config:  crashChat,
		replies: []providertest.Reply{crashHeld(crashReply("Paris.", 40, 3))},
		tasks:   []string{"Capital of France?"},
		moment: func(t *testing.T, p *crashProc, srv *providertest.Server, _ string) {
			crashUntil(t, p, "the model is called", func() bool { return len(srv.Requests()) == 1 })
			time.Sleep(crashSettle)
		},
		check: func(t *testing.T, killed []*crashLog, _ []string) {
			// What was written before the call is all there: the
			// dialog, the task and the working copy sent.
			f := killed[0]
			if len(f.order) != 2 || f.kinds[logs.KindFork] != 1 || f.messages() != 2 || f.kinds[logs.KindModelCall] != 0 {
				t.Errorf("the log of a run killed in its model call holds %v records in %d dialogs, want main, its task and the working copy", f.kinds, len(f.order))
			}
		},
	}, {
		name:   "between model calls",
		config: crashRefine,
		replies: []providertest.Reply{
			crashReply("Leaves fall down / autumn is here", 60, 12),
			crashReply("Count the syllables: 4-5, not 5-7-5. Rewrite it.", 90, 14),
			crashHeld(crashReply("Red maple leaves fall / quiet rain on the old roof / the year exhales", 110, 20)),
		},
		tasks: []string{"A haiku about autumn."},
		moment: func(t *testing.T, p *crashProc, _ *providertest.Server, logDir string) {
			// The moment the critic's call is on disk, before the solver's
			// revision: no settling.
			crashUntil(t, p, "two model calls are logged", func() bool { return crashCount(logDir, `"kind":"model_call"`) >= 2 })
		},
		check: func(t *testing.T, killed []*crashLog, _ []string) {
			f := killed[0]
			if n := f.kinds[logs.KindModelCall]; n != 2 || f.calls.InputTokens != 150 || f.calls.OutputTokens != 26 || f.calls.USD <= 0 {
				t.Errorf("the log holds %d model calls costing %+v, want the draft's and the critique's", n, f.calls)
			}
		},
	}, {
		name:    "during tool calls",
		config:  crashReact,
		replies: []providertest.Reply{toolCalls, crashHeld(crashReply("The calculator says 126. <answer>126</answer>", 200, 15))},
		tasks:   []string{"What is (17 + 25) * 3?"},
		moment: func(t *testing.T, p *crashProc, _ *providertest.Server, logDir string) {
			// The moment the first tool call is on disk: the second may
			// be running.
			crashUntil(t, p, "a tool call is logged", func() bool { return crashCount(logDir, `"kind":"tool_call"`) >= 1 })
		},
		check: func(t *testing.T, killed []*crashLog, _ []string) {
			f := killed[0]
			if f.kinds[logs.KindModelCall] != 1 || f.kinds[logs.KindToolCall] < 1 || f.calls.InputTokens != 120 {
				t.Errorf("the log holds %v records and calls costing %+v, want the call that asked for tools and a tool call", f.kinds, f.calls)
			}
		},
	}, {
		name:    "while waiting to retry a rate-limited call",
		config:  crashChat,
		replies: []providertest.Reply{providertest.RateLimited("30"), crashReply("Paris.", 40, 3)},
		again:   []providertest.Reply{crashReply("Paris.", 40, 3)},
		tasks:   []string{"Capital of France?"},
		moment: func(t *testing.T, p *crashProc, _ *providertest.Server, logDir string) {
			crashUntil(t, p, "the failed call is logged", func() bool { return crashCount(logDir, `"type":"rate_limit"`) >= 1 })
			time.Sleep(crashSettle)
		},
		check: func(t *testing.T, killed []*crashLog, _ []string) {
			f := killed[0]
			var mc *logs.ModelCall
			for _, rec := range f.records {
				if rec.ModelCall != nil {
					mc = rec.ModelCall
				}
			}
			if f.kinds[logs.KindModelCall] != 1 || mc.Error == nil || mc.Error.Type != "rate_limit" || mc.Error.RetryAfterMS != 30000 {
				t.Errorf("the log holds %v records, the last model call %+v: want the rate-limited call", f.kinds, mc)
			}
		},
	}, {
		name:   "while a batch of tasks runs",
		config: crashChat,
		replies: []providertest.Reply{
			crashReply("one", 30, 1), crashReply("two", 30, 1),
			crashHeld(crashReply("three", 30, 1)), crashHeld(crashReply("four", 30, 1)),
		},
		tasks: []string{"Say one.", "Say two.", "Say three.", "Say four."},
		moment: func(t *testing.T, p *crashProc, srv *providertest.Server, logDir string) {
			crashUntil(t, p, "two runs ended and two more call the model", func() bool {
				return len(srv.Requests()) == 4 && crashCount(logDir, `"kind":"run_end"`) == 2
			})
			time.Sleep(crashSettle)
		},
		check: func(t *testing.T, killed []*crashLog, all []string) {
			if len(all) != 4 || len(killed) != 2 {
				t.Fatalf("%d runs, %d of them killed; want 4 and 2", len(all), len(killed))
			}
			for _, dir := range all {
				f := readCrashLog(t, filepath.Join(dir, logs.EventsFile))
				if f.end != nil && (f.end.Status != logs.StatusOK || len(f.torn) > 0 || f.end.Totals.ModelCalls != 1 || !crashCostNear(f.end.Totals.Cost, f.calls)) {
					t.Errorf("a finished run of the batch ends with %+v; its model calls cost %+v", f.end, f.calls)
				}
			}
			for _, f := range killed {
				if f.kinds[logs.KindFork] != 1 || f.kinds[logs.KindModelCall] != 0 {
					t.Errorf("a run killed in its model call: %v", f.kinds)
				}
			}
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := providertest.NewOpenAIServer(t, c.replies...)
			dir := t.TempDir()
			cfg := filepath.Join(dir, "config.yaml")
			if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(c.config, "BASE_URL", srv.BaseURL())), 0o644); err != nil {
				t.Fatal(err)
			}
			logDir := filepath.Join(dir, "logs")
			args := []string{"run", cfg, "--log-dir", logDir}
			if len(c.tasks) == 1 {
				args = append(args, "--task", c.tasks[0])
			} else {
				var lines strings.Builder
				for _, task := range c.tasks {
					b, _ := json.Marshal(map[string]string{"task": task})
					lines.Write(append(b, '\n'))
				}
				tasks := filepath.Join(dir, "tasks.jsonl")
				if err := os.WriteFile(tasks, []byte(lines.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--tasks", tasks, "--concurrency", "2")
			}
			p := startCrashLLLM(t, bin, dir, args...)
			c.moment(t, p, srv, logDir)
			p.kill(t)

			all := crashRunDirs(logDir)
			if len(all) == 0 {
				t.Fatalf("no run directory under %s", logDir)
			}
			before := crashSnapshot(t, logDir)
			var killed []*crashLog
			var killedDirs []string
			for _, d := range all {
				if readCrashLog(t, filepath.Join(d, logs.EventsFile)).end == nil {
					killedDirs = append(killedDirs, d)
					killed = append(killed, crashCheckInterrupted(t, bin, logDir, d))
				}
			}
			c.check(t, killed, all)
			// Reading the logs changed nothing of them (a replay adds a run
			// of its own, beside them).
			for _, d := range all {
				if a, b := crashSnapshot(t, d), crashUnder(before, d); !slices.Equal(a, b) {
					t.Errorf("reading the logs changed run %s:\nbefore %q\nafter  %q", filepath.Base(d), b, a)
				}
			}

			// A second run into the same log root works, and leaves the
			// killed runs as they were.
			again := c.again
			if again == nil {
				for _, r := range c.replies {
					r.Delay = 0
					again = append(again, r)
				}
			}
			srv2 := providertest.NewOpenAIServer(t, again...)
			r := crashCLI(t, bin, dir, "run", cfg, "--task", c.tasks[0], "--log-dir", logDir, "-o", "json",
				"--set", "global.base_url="+srv2.BaseURL())
			wantCrashCalm(t, r, "the second run", 0)
			var res struct {
				RunID  string `json:"run_id"`
				Status string `json:"status"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Status != "ok" {
				t.Fatalf("the second run: %v\n%v", err, r)
			}
			for _, d := range all {
				if a, b := crashSnapshot(t, d), crashUnder(before, d); !slices.Equal(a, b) {
					t.Errorf("a second run changed run %s:\nbefore %q\nafter  %q", filepath.Base(d), b, a)
				}
			}
			runs := crashCLI(t, bin, dir, "runs", "-o", "json", "--log-dir", logDir)
			wantCrashCalm(t, runs, "runs after the second run", 0)
			if e := crashFindRun(t, runs, res.RunID); e.Status != "ok" {
				t.Errorf("the second run is listed as %q", e.Status)
			}
			for i, d := range killedDirs {
				if e := crashFindRun(t, runs, filepath.Base(d)); e.Status != string(logs.StatusInterrupted) {
					t.Errorf("after a second run, killed run %s is listed as %q", e.ID, e.Status)
				}
				// The diff of the killed run and the second one totals the
				// model calls each log holds.
				r := crashCLI(t, bin, dir, "diff", filepath.Base(d), res.RunID, "-o", "json", "--log-dir", logDir)
				wantCrashCalm(t, r, "diff", 0)
				var diff struct {
					A struct {
						RunID  string `json:"run_id"`
						Status string `json:"status"`
					} `json:"a"`
					Total struct {
						A dialog.Cost `json:"a"`
					} `json:"total"`
				}
				if err := json.Unmarshal([]byte(r.stdout), &diff); err != nil {
					t.Errorf("lllm diff -o json: not JSON: %v\n%v", err, r)
				} else if diff.A.RunID != filepath.Base(d) || diff.A.Status != string(logs.StatusInterrupted) || !crashCostNear(diff.Total.A, killed[i].calls) {
					t.Errorf("lllm diff -o json: run A %+v costs %+v; its log holds model calls costing %+v", diff.A, diff.Total.A, killed[i].calls)
				}
			}
		})
	}
}

// crashUnder keeps the snapshot lines of files under dir.
func crashUnder(snap []string, dir string) []string {
	var out []string
	for _, l := range snap {
		if l == dir || strings.HasPrefix(l, dir+" ") || strings.HasPrefix(l, dir+string(filepath.Separator)) {
			out = append(out, l)
		}
	}
	return out
}

// TestCrashTornLastLine: a machine that stops mid-write leaves a partial
// last line. Every command reads the log up to it, with a warning, and
// says the run was interrupted.
func TestCrashTornLastLine(t *testing.T) {
	bin := buildLLLM(t)
	srv := providertest.NewOpenAIServer(t,
		providertest.Reply{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "calculator", Arguments: `{"expression": "6 * 7"}`}},
			Usage: providertest.Usage{Input: 100, Output: 20}},
		crashHeld(crashReply("<answer>42</answer>", 150, 8)))
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(crashReact, "BASE_URL", srv.BaseURL())), 0o644); err != nil {
		t.Fatal(err)
	}
	logDir := filepath.Join(dir, "logs")
	p := startCrashLLLM(t, bin, dir, "run", cfg, "--task", "What is 6 * 7?", "--log-dir", logDir)
	crashUntil(t, p, "the second model call", func() bool { return len(srv.Requests()) == 2 })
	time.Sleep(crashSettle)
	p.kill(t)
	dirs := crashRunDirs(logDir)
	if len(dirs) != 1 {
		t.Fatalf("runs %v", dirs)
	}
	path := filepath.Join(dirs[0], logs.EventsFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	whole := readCrashLog(t, path)
	// Cut the last record in the middle, as a crash mid-write would.
	body := bytes.TrimSuffix(data, []byte("\n"))
	i := bytes.LastIndexByte(body, '\n')
	cut := append([]byte(nil), data[:i+1+(len(body)-i-1)/2]...)
	if err := os.WriteFile(path, cut, 0o644); err != nil {
		t.Fatal(err)
	}
	f := crashCheckInterrupted(t, bin, logDir, dirs[0])
	if len(f.torn) == 0 || len(f.records) != len(whole.records)-1 {
		t.Fatalf("the cut log has %d whole records and %d torn bytes; it had %d records", len(f.records), len(f.torn), len(whole.records))
	}
}

// crashCheckCancelled checks the log of a run that Ctrl-C stopped: exit 1 with
// "cancelled; log at", a finished log ending with a whole run_end of
// status cancelled whose totals are the records before it, one model_call
// record per request the server got, the status line's tokens those of the
// model calls, and every reader quiet about it.
func crashCheckCancelled(t *testing.T, bin, dir, logDir string, p *crashProc, code int, srv *providertest.Server) *crashLog {
	t.Helper()
	r := result{code, p.stdout.String(), p.stderr.String()}
	wantCrashCalm(t, r, "lllm run after Ctrl-C", ExitError)
	if !strings.Contains(r.stderr, "lllm: cancelled; log at "+logDir) {
		t.Errorf("stderr after Ctrl-C:\n%s", r.stderr)
	}
	dirs := crashRunDirs(logDir)
	if len(dirs) != 1 {
		t.Fatalf("runs %v", dirs)
	}
	id := filepath.Base(dirs[0])
	f := readCrashLog(t, filepath.Join(dirs[0], logs.EventsFile))
	if f.end == nil || f.end.Status != logs.StatusCancelled || f.end.Error == "" || len(f.torn) > 0 {
		t.Fatalf("the log of a cancelled run ends with %+v and %d torn bytes, want a whole run_end with status cancelled and why", f.end, len(f.torn))
	}
	tot := f.end.Totals
	if tot.ModelCalls != f.kinds[logs.KindModelCall] || tot.ToolCalls != f.kinds[logs.KindToolCall] || tot.Dialogs != len(f.order) ||
		tot.Messages != f.messages() || !crashCostNear(tot.Cost, f.calls) {
		t.Errorf("run_end totals %+v; the log holds %d model calls costing %+v, %d tool calls, %d dialogs, %d messages",
			tot, f.kinds[logs.KindModelCall], f.calls, f.kinds[logs.KindToolCall], len(f.order), f.messages())
	}
	if f.kinds[logs.KindTacticStart] != f.kinds[logs.KindTacticEnd] {
		t.Errorf("%d tactic_start and %d tactic_end records in a finished log", f.kinds[logs.KindTacticStart], f.kinds[logs.KindTacticEnd])
	}
	if got := len(srv.Requests()); f.kinds[logs.KindModelCall] != got {
		t.Errorf("the server got %d requests; the log holds %d model calls: every model call is recorded", got, f.kinds[logs.KindModelCall])
	}
	m := statusLine.FindStringSubmatch(strings.TrimSuffix(r.stdout, "\n"))
	if m == nil || m[1] != id || m[2] != "cancelled" || m[3] != fmt.Sprint(f.calls.InputTokens) || m[4] != fmt.Sprint(f.calls.OutputTokens) {
		t.Errorf("stdout after Ctrl-C is %q; the log's model calls used %d/%d tokens", r.stdout, f.calls.InputTokens, f.calls.OutputTokens)
	}

	r = crashCLI(t, bin, dir, "runs", "-o", "json", "--log-dir", logDir)
	wantCrashCalm(t, r, "runs", 0)
	if e := crashFindRun(t, r, id); e.Status != string(logs.StatusCancelled) || e.Totals == nil || e.Totals.ModelCalls != tot.ModelCalls || !crashCostNear(e.Totals.Cost, f.calls) {
		t.Errorf("lllm runs -o json: %+v, want cancelled with the log's totals", e)
	}
	for _, args := range [][]string{{"tree", id}, {"tree", id, "-o", "json"}, {"show", id}, {"show", id, "-o", "json"}} {
		r := crashCLI(t, bin, dir, append(args, "--log-dir", logDir)...)
		wantCrashCalm(t, r, strings.Join(args, " "), 0)
		if r.stderr != "" {
			t.Errorf("lllm %s on a cancelled run: stderr %q, want nothing: its log is finished", strings.Join(args, " "), r.stderr)
		}
	}
	// The replay of a cancelled run is cancelled where it was: exit 1.
	r = crashCLI(t, bin, dir, "replay", id, "--log-dir", logDir)
	wantCrashCalm(t, r, "replay", ExitError)
	return f
}

// TestCrashSIGINT: Ctrl-C cancels a run cleanly, in a slow model call or
// while an agent waits to retry one; the run does not wait for either.
// SIGTERM does the same (cli.Main).
func TestCrashSIGINT(t *testing.T) {
	bin := buildLLLM(t)
	for _, c := range []struct {
		name    string
		sig     os.Signal // os.Interrupt if nil
		replies []providertest.Reply
		calls   int // the request to interrupt the run in or after
		check   func(t *testing.T, f *crashLog)
	}{{
		name:    "during a slow model call",
		replies: []providertest.Reply{crashReply("Leaves fall down / autumn is here", 60, 12), crashHeld(crashReply("Too short.", 90, 4))},
		calls:   2,
		check: func(t *testing.T, f *crashLog) {
			// The call cut short is a model call like any: recorded, as
			// cancelled.
			var cancelled int
			for _, rec := range f.records {
				if mc := rec.ModelCall; mc != nil && mc.Error != nil && mc.Error.Type == "cancelled" {
					cancelled++
				}
			}
			if cancelled != 1 {
				t.Errorf("%d model calls recorded as cancelled, want the one cut short", cancelled)
			}
		},
	}, {
		name:    "while waiting out a rate limit",
		replies: []providertest.Reply{crashReply("Leaves fall down / autumn is here", 60, 12), providertest.RateLimited("30"), crashReply("Too short.", 90, 4)},
		calls:   2,
		check: func(t *testing.T, f *crashLog) {
			var last *logs.ModelCall
			for _, rec := range f.records {
				if rec.ModelCall != nil {
					last = rec.ModelCall
				}
			}
			if last == nil || last.Error == nil || last.Error.Type != "rate_limit" || last.Error.RetryAfterMS != 30000 {
				t.Errorf("the last model call is %+v, want the rate-limited one", last)
			}
		},
	}, {
		name:    "SIGTERM during a slow model call",
		sig:     syscall.SIGTERM,
		replies: []providertest.Reply{crashReply("Leaves fall down / autumn is here", 60, 12), crashHeld(crashReply("Too short.", 90, 4))},
		calls:   2,
		check:   func(t *testing.T, f *crashLog) {},
	}} {
		t.Run(c.name, func(t *testing.T) {
			srv := providertest.NewOpenAIServer(t, c.replies...)
			dir := t.TempDir()
			cfg := filepath.Join(dir, "config.yaml")
			if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(crashRefine, "BASE_URL", srv.BaseURL())), 0o644); err != nil {
				t.Fatal(err)
			}
			logDir := filepath.Join(dir, "logs")
			p := startCrashLLLM(t, bin, dir, "run", cfg, "--task", "A haiku about autumn.", "--log-dir", logDir)
			crashUntil(t, p, fmt.Sprintf("model call %d", c.calls), func() bool { return len(srv.Requests()) == c.calls })
			time.Sleep(crashSettle)
			sig := c.sig
			if sig == nil {
				sig = os.Interrupt
			}
			began := time.Now()
			code := p.signal(t, sig)
			if d := time.Since(began); d > 3*time.Second {
				t.Errorf("lllm took %v to stop after Ctrl-C", d)
			}
			if code != ExitError {
				t.Errorf("exit %d after Ctrl-C, want %d (a cancelled run)", code, ExitError)
			}
			c.check(t, crashCheckCancelled(t, bin, dir, logDir, p, code, srv))
		})
	}
}

// TestCrashAtStart kills `lllm run` the moment anything appears under its
// log root, which may be the hidden directory a run is made in before it
// appears whole. Either no run is seen at all, or a whole one is; every
// command says so calmly, and a second run works.
func TestCrashAtStart(t *testing.T) {
	bin := buildLLLM(t)
	srv := providertest.NewOpenAIServer(t, crashHeld(crashReply("Paris.", 40, 3)))
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(crashChat, "BASE_URL", srv.BaseURL())), 0o644); err != nil {
		t.Fatal(err)
	}
	logDir := filepath.Join(dir, "logs")
	p := startCrashLLLM(t, bin, dir, "run", cfg, "--task", "Capital of France?", "--log-dir", logDir)
	crashUntil(t, p, "something appears under the log root", func() bool {
		entries, _ := os.ReadDir(logDir)
		return len(entries) > 0
	})
	p.kill(t)

	visible := crashRunDirs(logDir)
	switch len(visible) {
	case 0:
		t.Logf("killed before the run directory appeared")
		r := crashCLI(t, bin, dir, "runs", "--log-dir", logDir)
		wantCrashCalm(t, r, "runs", 0)
		if r.stdout != "" || r.stderr != "no runs under "+logDir+"\n" {
			t.Errorf("lllm runs with only a run that never appeared:\n%v", r)
		}
		r = crashCLI(t, bin, dir, "runs", "-o", "json", "--log-dir", logDir)
		wantCrashCalm(t, r, "runs -o json", 0)
		if r.stdout != "[]\n" {
			t.Errorf("lllm runs -o json with only a run that never appeared:\n%v", r)
		}
		for _, cmd := range []string{"tree", "show", "replay"} {
			r := crashCLI(t, bin, dir, cmd, "latest", "--log-dir", logDir)
			wantCrashCalm(t, r, cmd+" latest", ExitError)
			if !strings.Contains(r.stderr, "no runs under "+logDir) {
				t.Errorf("lllm %s latest with no run that appeared:\n%v", cmd, r)
			}
		}
	case 1:
		t.Logf("killed after the run directory appeared")
		crashCheckInterrupted(t, bin, logDir, visible[0])
	default:
		t.Fatalf("%d runs from one lllm run", len(visible))
	}
	before := crashSnapshot(t, logDir)

	srv2 := providertest.NewOpenAIServer(t, crashReply("Paris.", 40, 3))
	r := crashCLI(t, bin, dir, "run", cfg, "--task", "Capital of France?", "--log-dir", logDir, "--set", "global.base_url="+srv2.BaseURL())
	wantCrashCalm(t, r, "the second run", 0)
	for _, d := range append(visible, crashHiddenDirs(logDir)...) {
		if a, b := crashSnapshot(t, d), crashUnder(before, d); !slices.Equal(a, b) {
			t.Errorf("a second run changed %s:\nbefore %q\nafter  %q", d, b, a)
		}
	}
	r = crashCLI(t, bin, dir, "runs", "-o", "json", "--log-dir", logDir)
	wantCrashCalm(t, r, "runs after the second run", 0)
	var list []*crashRunsEntry
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatal(err)
	}
	var ok int
	for _, e := range list {
		switch e.Status {
		case "ok":
			ok++
		case string(logs.StatusInterrupted), string(logs.StatusCancelled): // the killed run and its replay
		default:
			t.Errorf("lllm runs lists %+v", e)
		}
	}
	if ok != 1 {
		t.Errorf("lllm runs -o json after a second run:\n%s", r.stdout)
	}
}

// crashHiddenDirs lists the hidden directories under root.
func crashHiddenDirs(root string) []string {
	entries, _ := os.ReadDir(root)
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			out = append(out, filepath.Join(root, e.Name()))
		}
	}
	return out
}

// crashBestOfN is best_of_n on the fake server: four candidates, then a
// judge whose first verdict does not parse, so it answers again on a
// second working copy.
const crashBestOfN = `tactic_type: best_of_n
params: {n: 4}
global:
  model_name: openai/gpt-4o-mini
  base_url: BASE_URL
agent_configs:
  - name: solver
    system_prompt: You solve tasks.
  - name: judge
    system_prompt: You judge answers.
`

// crashPaced gives every reply of rs the delay pace.
func crashPaced(pace time.Duration, rs ...providertest.Reply) []providertest.Reply {
	for i := range rs {
		rs[i].Delay = pace
	}
	return rs
}

// crashToolReply is a reply that calls tools.
func crashToolReply(in, out int, calls ...providertest.ToolCall) providertest.Reply {
	return providertest.Reply{ToolCalls: calls, Usage: providertest.Usage{Input: in, Output: out}}
}

// TestCrashAnyMoment kills, then interrupts, runs of many model calls at
// moments spread over their whole length, measured on a run left to
// finish: best_of_n (forks, a judge's parse retry) and react (rounds of
// tool calls, a parse retry). After SIGKILL each log is read as after any
// crash; after Ctrl-C the run has finished its log, whatever it was doing.
func TestCrashAnyMoment(t *testing.T) {
	bin := buildLLLM(t)
	const pace = 15 * time.Millisecond
	const moments = 6
	for _, c := range []struct {
		name, config, task string
		replies            func() []providertest.Reply
	}{{
		name: "best_of_n", config: crashBestOfN, task: "Name a prime above 10.",
		replies: func() []providertest.Reply {
			return crashPaced(pace, crashReply("15 is prime.", 50, 5), crashReply("13: no divisor but 1 and itself.", 50, 9),
				crashReply("11, probably.", 50, 4), crashReply("17.", 50, 2),
				crashReply("The second one.", 160, 4), crashReply("<choice>2</choice>", 190, 6))
		},
	}, {
		name: "react", config: crashReact, task: "What is (17 + 25) * 3, and how many words is that sentence?",
		replies: func() []providertest.Reply {
			return crashPaced(pace,
				crashToolReply(100, 20, providertest.ToolCall{ID: "a1", Name: "calculator", Arguments: `{"expression": "17 + 25"}`}),
				crashToolReply(130, 20, providertest.ToolCall{ID: "a2", Name: "calculator", Arguments: `{"expression": "42 * 3"}`},
					providertest.ToolCall{ID: "a3", Name: "word_count", Arguments: `{"text": "What is (17 + 25) * 3"}`}),
				crashReply("It is 126, in 7 words.", 170, 8),
				crashReply("<answer>126, 7 words</answer>", 200, 9))
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			// start runs the config on a new server and log root.
			start := func(t *testing.T) (p *crashProc, dir, logDir string) {
				srv := providertest.NewOpenAIServer(t, c.replies()...)
				dir = t.TempDir()
				cfg := filepath.Join(dir, "config.yaml")
				if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(c.config, "BASE_URL", srv.BaseURL())), 0o644); err != nil {
					t.Fatal(err)
				}
				logDir = filepath.Join(dir, "logs")
				return startCrashLLLM(t, bin, dir, "run", cfg, "--task", c.task, "--log-dir", logDir), dir, logDir
			}

			// The whole run, to time it from the moment its directory
			// appears to its end.
			p, _, logDir := start(t)
			crashUntil(t, p, "the run directory appears", func() bool { return len(crashRunDirs(logDir)) > 0 })
			appeared := time.Now()
			select {
			case <-p.exited:
			case <-time.After(15 * time.Second):
				t.Fatal("the run did not finish")
			}
			length := time.Since(appeared)
			if p.err != nil || !strings.Contains(p.stdout.String(), "status ok") {
				t.Fatalf("the run left to finish: %v\nstdout:\n%s\nstderr:\n%s", p.err, p.stdout, p.stderr)
			}
			whole := readCrashLog(t, filepath.Join(crashRunDirs(logDir)[0], logs.EventsFile))
			t.Logf("the whole run takes %v after its directory appears and writes %d records %v", length, len(whole.records), whole.kinds)

			for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGINT} {
				t.Run(sig.String(), func(t *testing.T) {
					for i := range moments {
						after := length * time.Duration(i) / moments
						p, dir, logDir := start(t)
						crashUntil(t, p, "the run directory appears", func() bool { return len(crashRunDirs(logDir)) > 0 })
						time.Sleep(after)
						if p.done() {
							t.Logf("the run finished before %v", after)
							continue
						}
						code := p.signal(t, sig)
						dirs := crashRunDirs(logDir)
						if len(dirs) != 1 {
							t.Fatalf("%d runs", len(dirs))
						}
						if sig == syscall.SIGKILL {
							if code == -1 && readCrashLog(t, filepath.Join(dirs[0], logs.EventsFile)).end == nil {
								crashCheckInterrupted(t, bin, logDir, dirs[0])
							}
							continue
						}
						// Ctrl-C: exit 1 and a log finished as cancelled, or,
						// if the run was ending anyway, exit 0 and ok.
						r := result{code, p.stdout.String(), p.stderr.String()}
						wantCrashCalm(t, r, fmt.Sprintf("lllm run interrupted %v after its directory appeared", after), 0, ExitError)
						f := readCrashLog(t, filepath.Join(dirs[0], logs.EventsFile))
						switch {
						case f.end == nil || len(f.torn) > 0:
							t.Errorf("Ctrl-C %v in: the log does not end with a whole run_end (%d torn bytes, kinds %v)", after, len(f.torn), f.kinds)
							continue
						case code == ExitError && f.end.Status != logs.StatusCancelled, code == 0 && f.end.Status != logs.StatusOK:
							t.Errorf("Ctrl-C %v in: exit %d with run_end status %s", after, code, f.end.Status)
						}
						tot := f.end.Totals
						if tot.ModelCalls != f.kinds[logs.KindModelCall] || tot.ToolCalls != f.kinds[logs.KindToolCall] || tot.Dialogs != len(f.order) ||
							tot.Messages != f.messages() || !crashCostNear(tot.Cost, f.calls) {
							t.Errorf("Ctrl-C %v in: run_end totals %+v; the log holds %d model calls costing %+v, %d tool calls, %d dialogs, %d messages",
								after, tot, f.kinds[logs.KindModelCall], f.calls, f.kinds[logs.KindToolCall], len(f.order), f.messages())
						}
						if f.kinds[logs.KindTacticStart] != f.kinds[logs.KindTacticEnd] {
							t.Errorf("Ctrl-C %v in: %d tactic_start and %d tactic_end records in a finished log", after, f.kinds[logs.KindTacticStart], f.kinds[logs.KindTacticEnd])
						}
						r = crashCLI(t, bin, dir, "tree", filepath.Base(dirs[0]), "-o", "json", "--log-dir", logDir)
						wantCrashCalm(t, r, "tree -o json", 0)
						if r.stderr != "" {
							t.Errorf("lllm tree of a run cancelled %v in: %s", after, r.stderr)
						}
					}
				})
			}
		})
	}
}
