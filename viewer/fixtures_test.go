package viewer

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/tactics"
	_ "github.com/lllm-go/lllm/tactics/builtin"
)

var onePixelPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

// fixture is a log root with real runs in it.
type fixture struct {
	root string

	bestOfN string // a best_of_n run from configs/, through tactics.Run
	try2    string // its "try2" fork, which answered "13: ..."

	retries     string // a run with failed attempts
	retryMain   string // the canonical dialog
	parseFailed string // "main#1": its reply, cut at max_tokens, did not parse; retried
	callFailed  string // "main#2": its model call failed, then succeeded
	guest       string // "notes": a fork with a guest agent's turn

	images   string // a run with an image and a tool round
	imageDlg string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{root: t.TempDir()}

	cfg, err := config.Load(filepath.Join("..", "configs", "best_of_n.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := tactics.Run(t.Context(), cfg, "Name a prime between 10 and 20.", tactics.RunOptions{LogDir: f.root, Seed: 1})
	if err != nil || res.Status != logs.StatusOK {
		t.Fatalf("best_of_n run: %v %+v", err, res)
	}
	f.bestOfN = res.RunID
	run, err := logs.Open(f.root, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	forest, _, err := run.Forest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range forest.IDs() {
		if forest.Dialog(id).Alias() == "try2" {
			f.try2 = id
		}
	}
	if f.try2 == "" {
		t.Fatal("the best_of_n run has no try2 fork")
	}

	f.writeRetries(t)
	f.writeImages(t)
	return f
}

// writeRetries writes a run like an agent whose first reply, cut at
// max_tokens, fails to parse (main#1, retried in main#2 forked from it)
// and whose retry's first model call fails with a server error before
// succeeding.
func (f *fixture) writeRetries(t testing.TB) {
	w, run, err := logs.Create(f.root, logs.RunStart{Tactic: "retrying", Task: json.RawMessage(`"2+2?"`)}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.retries = run.ID
	main := must(dialog.New("coder", dialog.WithAlias("main"), dialog.WithSink(w)))
	f.retryMain = main.ID()
	must(main.PutText("You answer in <answer></answer> tags.", dialog.AsRole(dialog.RoleSystem), dialog.From("system")))
	must(main.PutText("What is 2+2?"))
	a1 := must(main.Fork(0, 0, dialog.WithAlias("main#1")))
	f.parseFailed = a1.ID()
	must(a1.Append(dialog.Message{Role: dialog.RoleAssistant, Name: "coder", Content: "four, I think", Model: "mock/demo",
		Usage: dialog.Usage{InputTokens: 20, OutputTokens: 4}}))
	writeCall(t, w, a1.ID(), 1, 1, "max_tokens", nil, &logs.MessageRef{Dialog: a1.ID(), Index: 2})
	a2 := must(a1.Fork(0, 0, dialog.WithAlias("main#2")))
	f.callFailed = a2.ID()
	must(a2.PutText("Your reply could not be parsed: no <answer> tag. Answer again."))
	writeCall(t, w, a2.ID(), 2, 1, "", &logs.CallError{Type: "server", Message: "mock: internal server error", Status: 500}, nil)
	reply := dialog.Message{Role: dialog.RoleAssistant, Name: "coder", Content: "<answer>4</answer>", Model: "mock/demo",
		Parsed: json.RawMessage(`{"answer":["4"]}`), Usage: dialog.Usage{InputTokens: 40, CachedInputTokens: 16, OutputTokens: 6}, USD: 0.0000068}
	must(a2.Append(reply))
	writeCall(t, w, a2.ID(), 2, 2, "end_turn", nil, &logs.MessageRef{Dialog: a2.ID(), Index: 4})
	must(main.Append(reply))

	notes := must(main.Fork(1, 1, dialog.WithAlias("notes")))
	f.guest = notes.ID()
	must(notes.PutText("Critic, what do you think?"))
	must(notes.Append(dialog.Message{Role: dialog.RoleAssistant, Name: "critic", Agent: "critic", Content: "Correct, and well formatted."}))
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
}

// writeImages writes a run with an image and a tool call round.
func (f *fixture) writeImages(t testing.TB) {
	w, run, err := logs.Create(f.root, logs.RunStart{Tactic: "vision"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.images = run.ID
	d := must(dialog.New("geometer", dialog.WithAlias("main"), dialog.WithSink(w)))
	f.imageDlg = d.ID()
	must(d.PutImage(dialog.ImageBytes(onePixelPNG), "the rectangle"))
	must(d.PutText("What is its area?"))
	must(d.Append(dialog.Message{Role: dialog.RoleToolCall, Name: "geometer", FunctionCalls: []dialog.FunctionCall{
		{ID: "call_a", Name: "area", Arguments: json.RawMessage(`{"w":3,"h":4}`), Result: "12"}}}))
	must(d.Append(dialog.Message{Role: dialog.RoleTool, Name: "area", ToolCallID: "call_a", Content: "12"}))
	must(d.Append(dialog.Message{Role: dialog.RoleAssistant, Name: "geometer", Content: "The area is 12."}))
	if err := w.Finish(logs.RunEnd{Status: logs.StatusFailed, Error: "the judge was not reached"}); err != nil {
		t.Fatal(err)
	}
}

func writeCall(t testing.TB, w *logs.Writer, dlg string, call, attempt int, finish string, cerr *logs.CallError, reply *logs.MessageRef) {
	t.Helper()
	err := w.Write(&logs.Record{Kind: logs.KindModelCall, Dialog: dlg, ModelCall: &logs.ModelCall{
		Agent: "coder", Provider: "mock", Model: "mock/demo", Call: call, Attempt: attempt, Alias: "main", Turn: 1,
		RequestDigest: "sha256:test", Reply: reply, FinishReason: finish, Error: cerr, LatencyMS: 1}})
	if err != nil {
		t.Fatal(err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// appendLine appends raw bytes to a run's log.
func appendLine(t testing.TB, root, run, data string) {
	t.Helper()
	fh, err := os.OpenFile(filepath.Join(root, run, logs.EventsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.WriteString(data); err != nil {
		t.Fatal(err)
	}
}

// writeRawLog writes lines, one a line, as the log of run id under root
// (a hand-written log, for what a Writer does not write), and returns
// the log's path.
func writeRawLog(t testing.TB, root, id string, lines ...string) string {
	t.Helper()
	path := filepath.Join(root, id, logs.EventsFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
