package cli

// Contract tests: the manners every command of the lllm CLI owes its users,
// checked against what the README, the docs and the --help texts promise
// and what mature CLIs (gh, kubectl) do. They walk the cobra command tree,
// so a new command is held to the same contract, or the test says which
// entry of its tables the command needs.
//
// The fixtures are runs of the repository's example configs on the mock
// provider, made by lllm run itself.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lllm-go/lllm/logs"
)

// ctRepo is the repository root, resolved while the working directory is
// still this package's.
var ctRepo = func() string {
	abs, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		panic(err)
	}
	return abs
}()

func ctConfig(name string) string { return filepath.Join(ctRepo, "configs", name) }

// ctResult is what one run of the command line did.
type ctResult struct {
	code           int
	stdout, stderr string
}

func (r ctResult) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// ctStdinMu serialises the swaps of os.Stdin.
var ctStdinMu sync.Mutex

// ctExec runs the command line as the lllm binary does (Execute), with
// stdin the given text, as if piped: a command never waits on the
// terminal of the test. It gives up after timeout (0: 60s), which
// cancels the command's context as Ctrl-C does.
func ctExec(t *testing.T, timeout time.Duration, stdin string, args ...string) ctResult {
	t.Helper()
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = io.WriteString(pw, stdin)
		_ = pw.Close()
	}()
	ctStdinMu.Lock()
	old := os.Stdin
	os.Stdin = pr
	var out, errb bytes.Buffer
	code := Execute(ctx, args, &out, &errb)
	os.Stdin = old
	ctStdinMu.Unlock()
	_ = pr.Close()
	return ctResult{code, out.String(), errb.String()}
}

func ct(t *testing.T, args ...string) ctResult {
	t.Helper()
	return ctExec(t, 0, "", args...)
}

// ctLines splits output into its lines, without the last newline.
func ctLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// ctHint is the one line a usage error may add after its message.
func ctHint(path string) string { return "Run '" + path + " --help' for usage." }

// ctWantUsage checks a usage error of the command at path: exit 2,
// nothing on stdout, one "lllm: " line containing every one of subs, and
// at most the hint line naming the same command.
func ctWantUsage(t *testing.T, r ctResult, path string, subs ...string) {
	t.Helper()
	ctWantFailure(t, r, ExitUsage, path, subs...)
}

// ctWantFailure checks a failed command: exit code, nothing on stdout, one
// "lllm: " line with every one of subs, then (for a usage error only) at
// most the hint line for the command at path.
func ctWantFailure(t *testing.T, r ctResult, code int, path string, subs ...string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit code %d, want %d\n%v", r.code, code, r)
		return
	}
	if r.stdout != "" {
		t.Errorf("an error printed to stdout:\n%v", r)
	}
	lines := ctLines(r.stderr)
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "lllm: ") {
		t.Errorf("stderr does not start with one \"lllm: \" line:\n%v", r)
		return
	}
	switch {
	case len(lines) == 1:
	case len(lines) == 2 && code == ExitUsage && lines[1] == ctHint(path):
	default:
		t.Errorf("want one error line (and for a usage error the hint %q), got %d lines:\n%s", ctHint(path), len(lines), r.stderr)
	}
	for _, s := range subs {
		if !strings.Contains(lines[0], s) {
			t.Errorf("error %q does not mention %q", lines[0], s)
		}
	}
}

// ctCommands returns every command of a fresh tree that a user can see,
// the root first.
func ctCommands() []*cobra.Command {
	var out []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		out = append(out, c)
		for _, sub := range c.Commands() {
			if !sub.Hidden {
				walk(sub)
			}
		}
	}
	walk(NewRootCmd())
	return out
}

// ctPath is a command's path without the program name: "sweep report".
func ctPath(c *cobra.Command) string {
	return strings.Join(strings.Fields(c.CommandPath())[1:], " ")
}

func ctArgs(c *cobra.Command) []string { return strings.Fields(c.CommandPath())[1:] }

// ctFormatFlag is a command's output format flag (-o), or nil.
func ctFormatFlag(c *cobra.Command) *pflag.Flag {
	if f := c.Flags().ShorthandLookup("o"); f != nil {
		return f
	}
	return c.Flags().Lookup("output")
}

// ctFormats are the output formats the help of flag f lists: "output
// format: text or json".
func ctFormats(t *testing.T, f *pflag.Flag) []string {
	t.Helper()
	_, list, ok := strings.Cut(f.Usage, ": ")
	if !ok {
		t.Fatalf("the help of --%s (%q) does not list its values as \"...: a or b\"", f.Name, f.Usage)
	}
	var out []string
	for _, v := range regexp.MustCompile(`\s*(?:,|\bor\b|\|)\s*`).Split(list, -1) {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// ctPositional is the shape of a command's arguments by its usage line:
// how many it needs and how many it takes at most (-1: any number).
func ctPositional(c *cobra.Command) (names []string, min, max int) {
	depth := 0
	for _, tok := range strings.Fields(c.Use)[1:] {
		if strings.HasPrefix(tok, "(") {
			depth++
		}
		if depth > 0 {
			if strings.HasSuffix(tok, ")") {
				depth--
			}
			continue
		}
		if tok == "[flags]" || strings.HasPrefix(tok, "-") || strings.HasPrefix(tok, "[-") {
			continue
		}
		optional := strings.HasPrefix(tok, "[")
		name := strings.Trim(tok, "[]")
		variadic := strings.HasSuffix(name, "...") || name == "command"
		name = strings.TrimSuffix(name, "...")
		names = append(names, name)
		if !optional {
			min++
		}
		if variadic {
			max = -1
		} else if max >= 0 {
			max++
		}
	}
	return names, min, max
}

// ctRunLike reports whether an argument name is a RUN.
func ctRunLike(name string) bool { return regexp.MustCompile(`^RUN(_[A-Z0-9]+)?$`).MatchString(name) }

// ctFixture is a log root holding runs of the example configs, a sweep,
// and the paths the commands are given.
type ctFixture struct {
	dir      string // everything lives under it
	logDir   string
	chat     string // a chat run: "Capital of France?"
	best     string // a best_of_n run of the quickstart
	torn     string // a chat run whose log's last line was cut off
	spec     string // a small sweep spec over configs/chat.yaml
	sweepDir string // its results, after one run
	tasks    string // a JSONL tasks file
	serveCfg string // a copy of configs/serve.yaml (its data dir beside it)
}

// ctRunID runs lllm run with args and -o json and returns the run id.
func ctRunID(t *testing.T, args ...string) string {
	t.Helper()
	r := ct(t, append(args, "-o", "json")...)
	var out struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); r.code != 0 || err != nil || out.RunID == "" || out.Status != "ok" {
		t.Fatalf("making a fixture: lllm %s: %v\n%v", strings.Join(args, " "), err, r)
	}
	return out.RunID
}

func newCtFixture(t *testing.T, withSweep bool) *ctFixture {
	t.Helper()
	dir := t.TempDir()
	f := &ctFixture{dir: dir, logDir: filepath.Join(dir, "logs")}
	f.chat = ctRunID(t, "run", ctConfig("chat.yaml"), "--task", "Capital of France?", "--log-dir", f.logDir)
	f.best = ctRunID(t, "run", ctConfig("quickstart.yaml"), "--task", "Name a prime number above 10.", "--log-dir", f.logDir)
	f.torn = ctRunID(t, "run", ctConfig("chat.yaml"), "--task", "Hello?", "--log-dir", f.logDir)
	file, err := os.OpenFile(filepath.Join(f.logDir, f.torn, logs.EventsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = file.WriteString(`{"seq":99,"ts":"2026-01-01T00:00:00Z","kind":"mess`)
	if cerr := file.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}

	f.tasks = filepath.Join(dir, "tasks.jsonl")
	ctWrite(t, f.tasks, "{\"id\": \"a\", \"task\": \"Capital of France?\"}\n{\"id\": \"b\", \"task\": \"Hello?\"}\n")
	sweepSrc := filepath.Join(dir, "sweep")
	f.spec = filepath.Join(sweepSrc, "spec.yaml")
	ctWrite(t, filepath.Join(sweepSrc, "rows.jsonl"),
		"{\"id\": 1, \"input\": \"Capital of France?\", \"expected\": \"Paris\"}\n{\"id\": 2, \"input\": \"Hello?\", \"expected\": \"France\"}\n")
	ctWrite(t, f.spec, "name: contract\nconfig: "+ctConfig("chat.yaml")+"\ndataset: rows.jsonl\nscorers: [{type: contains, name: mentions}]\n")
	f.sweepDir = filepath.Join(f.logDir, "sweeps", "contract")
	if withSweep {
		if r := ct(t, "sweep", f.spec, "--log-dir", f.logDir); r.code != 0 {
			t.Fatalf("making a fixture: sweep:\n%v", r)
		}
	}
	data, err := os.ReadFile(ctConfig("serve.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	f.serveCfg = filepath.Join(dir, "configs", "serve.yaml")
	ctWrite(t, f.serveCfg, string(data))
	return f
}

func ctWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ctServe runs lllm serve with args (and --addr 127.0.0.1:0) until the
// test ends, and returns the address it listens on.
func ctServe(t *testing.T, args ...string) string {
	t.Helper()
	url, _ := serveInProcess(t, args...)
	return strings.TrimPrefix(url, "http://")
}

// ctInvocation is one way to run a command for real.
type ctInvocation struct {
	name  string
	args  []string
	stdin string
	// timeout stops a command that serves until Ctrl-C.
	timeout time.Duration
}

// ctJSONInvocations are, for every command with an output format, the
// invocations that succeed, to be run with -o json. serveAddr is a
// running lllm serve.
func ctJSONInvocations(f *ctFixture, serveAddr string) map[string][]ctInvocation {
	ld := []string{"--log-dir", f.logDir}
	return map[string][]ctInvocation{
		"run": {
			{name: "one task", args: append([]string{"run", ctConfig("chat.yaml"), "--task", "Capital of France?"}, ld...)},
			{name: "tasks file", args: append([]string{"run", ctConfig("chat.yaml"), "--tasks", f.tasks}, ld...)},
		},
		"runs": {{name: "runs", args: append([]string{"runs"}, ld...)}},
		"tree": {
			{name: "best_of_n", args: append([]string{"tree", f.best}, ld...)},
			{name: "torn log", args: append([]string{"tree", f.torn}, ld...)},
		},
		"show": {
			{name: "best_of_n", args: append([]string{"show", f.best}, ld...)},
			{name: "torn log", args: append([]string{"show", f.torn}, ld...)},
		},
		"diff": {
			{name: "chat and best_of_n", args: append([]string{"diff", f.chat, f.best}, ld...)},
			{name: "torn log", args: append([]string{"diff", f.torn, f.chat}, ld...)},
		},
		"replay": {
			{name: "best_of_n", args: append([]string{"replay", f.best}, ld...)},
			{name: "torn log", args: append([]string{"replay", f.torn}, ld...)},
		},
		"sweep": {
			{name: "dry run", args: append([]string{"sweep", f.spec, "--dry-run"}, ld...)},
			{name: "resumed", args: append([]string{"sweep", f.spec}, ld...)},
		},
		"sweep report": {{name: "report", args: []string{"sweep", "report", f.sweepDir}}},
		"sweep merge":  {{name: "merge", args: []string{"sweep", "merge", f.sweepDir}}},
		"chat": {{name: "chat", args: []string{"chat", "assistant", "--sender", "contract", "--addr", serveAddr},
			stdin: "Hello there.\n/archives\n/history\n/quit\n"}},
		"validate": {
			{name: "tactic config", args: []string{"validate", ctConfig("quickstart.yaml")}},
			{name: "sweep spec", args: append([]string{"validate", f.spec}, ld...)},
			{name: "serve config", args: []string{"validate", f.serveCfg}},
		},
		"version": {{name: "version", args: []string{"version"}}},
	}
}

// ctDataKeys hold data, not field names: their keys are the user's
// (config paths, a parser's fields, labels, pass@k's k).
var ctDataKeys = map[string]bool{
	"settings": true, "parsed": true, "labels": true, "metadata": true, "arguments": true,
	"result": true, "pass_at_k": true, "params": true, "task": true, "a": true, "b": true,
}

var ctSnake = regexp.MustCompile(`^[a-z0-9]+(_[a-z0-9]+)*$`)

// ctNotSnake returns the JSON keys of v that are not snake_case, with
// where they are.
func ctNotSnake(v any, at string) []string {
	var bad []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if !ctSnake.MatchString(k) {
				bad = append(bad, at+"."+k)
			}
			if !ctDataKeys[k] {
				bad = append(bad, ctNotSnake(x, at+"."+k)...)
			}
		}
	case []any:
		for i, x := range v {
			bad = append(bad, ctNotSnake(x, fmt.Sprintf("%s[%d]", at, i))...)
		}
	}
	return bad
}

// ctSaysJSONLines reports whether a command's help promises JSON Lines
// (one JSON value a line) rather than one JSON document.
func ctSaysJSONLines(c *cobra.Command) bool {
	return regexp.MustCompile(`(?i)\bone JSON (line|\w+ per line|\w+ a line)|JSON lines\b`).MatchString(c.Long + "\n" + c.Example)
}

// ctDocumentedKeys are the JSON keys a command's help promises for -o
// json: the names in {...} and the quoted "names" of the clauses (sentences,
// semicolon-separated parts, items of a list of formats) that speak of
// JSON; and the values it gives some of them: "calls" is 0.
func ctDocumentedKeys(c *cobra.Command) (keys []string, values map[string]float64) {
	values = map[string]float64{}
	// A list item starts a line with a word and a gap: "  json     the...".
	long := regexp.MustCompile(`\n  ([a-z]+ {2,})`).ReplaceAllString(c.Long, ".\n$1")
	for _, clause := range regexp.MustCompile(`\.\s+|;\s+|\n\s*\n`).Split(long, -1) {
		for _, m := range regexp.MustCompile(`"([a-z][a-z_]*)" is (\d+)\b`).FindAllStringSubmatch(clause, -1) {
			values[m[1]], _ = strconv.ParseFloat(m[2], 64)
		}
		if !regexp.MustCompile(`(?i)\bjson\b`).MatchString(clause) {
			continue
		}
		for _, m := range regexp.MustCompile(`\{[^{}]*(\{[^{}]*\}[^{}]*)*\}`).FindAllString(clause, -1) {
			keys = append(keys, regexp.MustCompile(`[a-z][a-z_]*`).FindAllString(m, -1)...)
		}
		for _, m := range regexp.MustCompile(`"([a-z][a-z_]*)"`).FindAllStringSubmatch(clause, -1) {
			keys = append(keys, m[1])
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys), values
}

// ctHasKey reports whether v has the key k at any depth.
func ctHasKey(v any, k string) bool {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v[k]; ok {
			return true
		}
		for _, x := range v {
			if ctHasKey(x, k) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if ctHasKey(x, k) {
				return true
			}
		}
	}
	return false
}

// ctDecodeJSON checks that stdout is one JSON document and nothing else,
// or JSON Lines when lines is set, and returns the values.
func ctDecodeJSON(stdout string, lines bool) ([]any, error) {
	if lines {
		var out []any
		for i, l := range ctLines(stdout) {
			var v map[string]any
			if err := json.Unmarshal([]byte(l), &v); err != nil {
				return nil, fmt.Errorf("line %d is not a JSON object: %v: %q", i+1, err, l)
			}
			out = append(out, v)
		}
		if len(out) == 0 {
			return nil, errors.New("no JSON lines")
		}
		return out, nil
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if rest := strings.TrimSpace(stdout[dec.InputOffset():]); rest != "" {
		return nil, fmt.Errorf("more than one JSON document: after it comes %q", truncateText(rest, 80))
	}
	return []any{v}, nil
}

// TestContractHelp: every command's --help and -h exit 0 with a usage
// line, a one-line short description listed by its parent, at least one
// example, and a description for every flag.
func TestContractHelp(t *testing.T) {
	cmds := ctCommands()
	if len(cmds) < 12 {
		t.Fatalf("the command tree has %d commands: the walk is broken", len(cmds))
	}
	for _, c := range cmds {
		path := ctArgs(c)
		t.Run("lllm "+ctPath(c), func(t *testing.T) {
			long := ct(t, append(path, "--help")...)
			if long.code != 0 || long.stderr != "" {
				t.Fatalf("--help fails:\n%v", long)
			}
			if short := ct(t, append(path, "-h")...); short.code != 0 || short.stdout != long.stdout || short.stderr != "" {
				t.Errorf("-h differs from --help:\n%v", short)
			}
			help := long.stdout
			if !regexp.MustCompile(`(?m)^Usage:\n  ` + regexp.QuoteMeta(c.CommandPath()) + `( |$)`).MatchString(help) {
				t.Errorf("no usage line \"%s ...\":\n%s", c.CommandPath(), help)
			}
			switch s := c.Short; {
			case strings.TrimSpace(s) == "":
				t.Errorf("no short description")
			case strings.ContainsAny(s, "\n\r") || len(s) > 80:
				t.Errorf("short description %q is not one short line", s)
			case strings.HasSuffix(s, "."):
				t.Errorf("short description %q ends with a period (gh and kubectl's do not)", s)
			case !strings.Contains(help, s) && !strings.Contains(help, strings.SplitN(c.Long, "\n", 2)[0]):
				t.Errorf("--help shows neither the short nor the long description")
			}
			if p := c.Parent(); p != nil {
				ph := ct(t, append(ctArgs(p), "--help")...).stdout
				if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(c.Name()) + ` +` + regexp.QuoteMeta(c.Short) + `$`).MatchString(ph) {
					t.Errorf("%s --help does not list %q with its short description", p.CommandPath(), c.Name())
				}
			}
			ex, ok := ctSection(help, "Examples:")
			if !ok {
				t.Errorf("no Examples section:\n%s", help)
			} else if !slices.ContainsFunc(strings.Split(ex, "\n"), func(l string) bool {
				l = strings.TrimSpace(l)
				return !strings.HasPrefix(l, "#") && regexp.MustCompile(`\blllm\b`).MatchString(l)
			}) {
				t.Errorf("the Examples section has no lllm command:\n%s", ex)
			}
			seen := map[string]bool{}
			check := func(f *pflag.Flag) {
				if f.Hidden || seen[f.Name] {
					return
				}
				seen[f.Name] = true
				if strings.TrimSpace(f.Usage) == "" {
					t.Errorf("flag --%s has no description", f.Name)
				}
				if !strings.Contains(help, "--"+f.Name) {
					t.Errorf("--help does not show flag --%s", f.Name)
				}
			}
			c.LocalFlags().VisitAll(check)
			c.InheritedFlags().VisitAll(check)
		})
	}
}

// ctSection returns the indented lines under a heading of a help text.
func ctSection(help, heading string) (string, bool) {
	_, rest, ok := strings.Cut(help, "\n"+heading+"\n")
	if !ok {
		return "", false
	}
	var out []string
	for _, l := range strings.Split(rest, "\n") {
		if l != "" && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t") {
			break
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n"), true
}

// ctInvocationText is one lllm command line found in a help text or a doc,
// and where.
type ctInvocationText struct {
	where   string
	line    string // the command line, from lllm on
	comment string // a trailing "# ..." comment, which may name flags
	// strict is set when the line is meant to run as written (an example,
	// a shell block), so its arguments are checked too.
	strict bool
}

var (
	ctInvocationStart = regexp.MustCompile(`(?:^|[\s(|;&])(?:go run \./cmd/lllm|lllm)(?:\s|$)`)
	ctPlaceholder     = regexp.MustCompile(`<[A-Za-z][^<>()]*>`)
)

// ctFindInvocations finds the lllm command lines in one line of text.
func ctFindInvocations(where, text string, strict bool) []ctInvocationText {
	var out []ctInvocationText
	text = ctPlaceholder.ReplaceAllString(text, "PLACEHOLDER")
	// An invocation inside a comment is not one.
	_, comment := ctCutCommand(text)
	commentStart := len(text) - len(comment)
	for _, loc := range ctInvocationStart.FindAllStringIndex(text, -1) {
		if loc[0] >= commentStart && comment != "" {
			break
		}
		start := loc[0]
		if start > 0 || text[0] != 'g' && text[0] != 'l' {
			start++ // the boundary character
		}
		rest := strings.TrimPrefix(text[start:], "go run ./cmd/lllm")
		rest = strings.TrimPrefix(rest, "lllm")
		cmdline, comment := ctCutCommand(rest)
		out = append(out, ctInvocationText{where: where, line: "lllm" + cmdline, comment: comment, strict: strict})
	}
	return out
}

// ctCutCommand cuts a shell command line at the first unquoted pipe,
// redirection, closing parenthesis, separator or comment; the comment is
// returned apart. A "|" between two words ("text|json") is a synopsis's
// alternation, not a pipe.
func ctCutCommand(s string) (cmd, comment string) {
	var quote rune
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			return s[:i], s[i+1:]
		case r == '\\' && i+1 < len(s) && s[i+1] == '|':
			return s[:i], ""
		case r == '|' && i > 0 && i+1 < len(s) && s[i-1] != ' ' && s[i+1] != ' ':
			// text|json
		case strings.ContainsRune("|>)<;&`", r):
			return s[:i], ""
		}
	}
	return s, ""
}

// ctShellWords splits a command line into words as sh does, quotes
// removed. Variables stay as written.
func ctShellWords(s string) []string {
	var words []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// ctCheckInvocation checks that a documented command line names a command
// that exists, only flags it has, output formats it accepts and, for a
// strict line, arguments it takes.
func ctCheckInvocation(t *testing.T, inv ctInvocationText) {
	t.Helper()
	words := ctShellWords(inv.line)[1:]
	synopsis := strings.Contains(inv.line, "[") || strings.Contains(inv.line, "...")
	var cleaned []string
	for _, w := range words {
		w = strings.TrimSuffix(strings.Trim(w, "[]"), "...")
		w = strings.Trim(w, "[]")
		if w != "" {
			cleaned = append(cleaned, w)
		}
	}
	root := NewRootCmd()
	c, rest, err := root.Find(cleaned)
	if err != nil {
		t.Errorf("%s: %q: %v", inv.where, inv.line, err)
		return
	}
	// Flags, with the values of the format flag checked against the
	// formats the command accepts.
	var positional []string
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		if !strings.HasPrefix(w, "-") || w == "-" {
			positional = append(positional, w)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
		var f *pflag.Flag
		if strings.HasPrefix(w, "--") {
			f = c.Flags().Lookup(name)
			if f == nil {
				f = c.InheritedFlags().Lookup(name)
			}
		} else if len(name) == 1 {
			f = c.Flags().ShorthandLookup(name)
			if f == nil {
				f = c.InheritedFlags().ShorthandLookup(name)
			}
		}
		if f == nil {
			t.Errorf("%s: %q: %s has no flag %s", inv.where, inv.line, c.CommandPath(), w)
			continue
		}
		if !hasValue && f.NoOptDefVal == "" && i+1 < len(rest) {
			i++
			value, hasValue = rest[i], true
		}
		if hasValue && f == ctFormatFlag(c) && value != "..." {
			ctCheckFormatValues(t, inv, c, value)
		}
	}
	// Flags named in the comment: "# or --tasks FILE.jsonl; -o json".
	for _, m := range regexp.MustCompile(`(?:^|[\s(,;])(--[a-z][a-z-]*|-o)(?:[ =]([^\s,;)]+))?`).FindAllStringSubmatch(inv.comment, -1) {
		name := strings.TrimLeft(m[1], "-")
		f := c.Flags().Lookup(name)
		if m[1] == "-o" {
			f = c.Flags().ShorthandLookup("o")
		}
		if f == nil && c.InheritedFlags().Lookup(name) == nil {
			t.Errorf("%s: %q names %s, which %s does not have", inv.where, "lllm "+ctPath(c)+" #"+inv.comment, m[1], c.CommandPath())
			continue
		}
		if f != nil && f == ctFormatFlag(c) && m[2] != "" {
			ctCheckFormatValues(t, inv, c, m[2])
		}
	}
	if inv.strict && !synopsis {
		if err := c.ValidateArgs(positional); err != nil {
			t.Errorf("%s: %q: %v", inv.where, inv.line, err)
		}
	}
}

func ctCheckFormatValues(t *testing.T, inv ctInvocationText, c *cobra.Command, value string) {
	t.Helper()
	for _, v := range strings.Split(value, "|") {
		fresh, _, err := NewRootCmd().Find(ctArgs(c))
		if err != nil {
			t.Fatal(err)
		}
		if err := ctFormatFlag(fresh).Value.Set(v); err != nil {
			t.Errorf("%s: %q: %s does not accept output format %q: %v", inv.where, inv.line, c.CommandPath(), v, err)
		}
	}
}

// TestContractDocumentedInvocations: every lllm command line in the
// commands' examples, in the README and in docs/ names a real command,
// real flags and accepted output formats, and an example passes the
// command's argument check.
func TestContractDocumentedInvocations(t *testing.T) {
	var invs []ctInvocationText
	for _, c := range ctCommands() {
		for i, l := range strings.Split(c.Example, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "#") {
				continue
			}
			invs = append(invs, ctFindInvocations(fmt.Sprintf("%s example line %d", c.CommandPath(), i+1), l, true)...)
		}
	}
	docs, _ := filepath.Glob(filepath.Join(ctRepo, "docs", "*.md"))
	docs = append([]string{filepath.Join(ctRepo, "README.md")}, docs...)
	n := 0
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(ctRepo, doc)
		lines := strings.Split(string(data), "\n")
		fence := ""
		for i := 0; i < len(lines); i++ {
			l, where := lines[i], fmt.Sprintf("%s:%d", name, i+1)
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				if fence == "" {
					fence = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "```")) + " "
				} else {
					fence = ""
				}
				continue
			}
			switch fence {
			case "":
				// Inline code: `lllm tree RUN [--format ...]`.
				for _, m := range regexp.MustCompile("`(lllm [^`]+)`").FindAllStringSubmatch(l, -1) {
					invs = append(invs, ctFindInvocations(where, m[1], false)...)
				}
			case "sh ", "bash ", "shell ", "console ", " ":
				for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
					i++
					l = strings.TrimSuffix(l, "\\") + " " + strings.TrimSpace(lines[i])
				}
				found := ctFindInvocations(where, l, true)
				if fence == " " {
					// A block without a language holds output too: only
					// lines that start with a command are commands.
					found = nil
					if s := strings.TrimSpace(l); strings.HasPrefix(s, "lllm ") || strings.HasPrefix(s, "go run ./cmd/lllm ") {
						found = ctFindInvocations(where, s, true)
					}
				}
				invs = append(invs, found...)
			}
		}
		n++
	}
	if n < 2 || len(invs) < 40 {
		t.Fatalf("found %d command lines in %d docs: the scan is broken", len(invs), n)
	}
	for _, inv := range invs {
		ctCheckInvocation(t, inv)
	}
}

// TestContractOutputJSON: every command with -o/--output prints, with
// -o json, valid JSON on stdout and nothing else (JSON Lines where its help
// says so), with snake_case keys like the run log's and the keys its help
// promises, and warnings only on stderr. The values its help lists for -o are the values it accepts, and
// any other is one usage error naming them.
func TestContractOutputJSON(t *testing.T) {
	f := newCtFixture(t, true)
	addr := ctServe(t, "--config", f.serveCfg, "--data-dir", filepath.Join(f.dir, "served"))
	table := ctJSONInvocations(f, addr)
	for _, c := range ctCommands() {
		flag := ctFormatFlag(c)
		if flag == nil {
			continue
		}
		path := ctPath(c)
		invs, ok := table[path]
		if !ok {
			t.Errorf("lllm %s has -o but no invocation in ctJSONInvocations: add one", path)
			continue
		}
		formats := ctFormats(t, flag)
		if !slices.Contains(formats, "json") {
			t.Errorf("lllm %s -o lists %v, without json", path, formats)
			continue
		}
		lines := ctSaysJSONLines(c)
		keys, values := ctDocumentedKeys(c)
		for _, inv := range invs {
			for _, o := range []string{"-o", "--output"} {
				t.Run(path+" "+inv.name+" "+o, func(t *testing.T) {
					r := ctExec(t, inv.timeout, inv.stdin, append(slices.Clone(inv.args), o, "json")...)
					if r.code != 0 {
						t.Fatalf("%v", r)
					}
					vals, err := ctDecodeJSON(r.stdout, lines)
					if err != nil {
						t.Fatalf("-o json: %v\n%v", err, r)
					}
					for _, v := range vals {
						if bad := ctNotSnake(v, ""); len(bad) > 0 {
							t.Errorf("JSON keys not in snake_case: %v", bad)
						}
					}
					if !lines {
						for _, k := range keys {
							if !ctHasKey(vals[0], k) {
								t.Errorf("its --help promises the JSON key %q; the output has none:\n%s", k, r.stdout)
							}
						}
						for k, want := range values {
							if m, ok := vals[0].(map[string]any); !ok || m[k] != want {
								t.Errorf("its --help says %q is %v; the output has %v", k, want, m[k])
							}
						}
					}
					if inv.name == "torn log" && !regexp.MustCompile(`(?m)^lllm: warning: .*torn`).MatchString(r.stderr) {
						t.Errorf("a torn log gives no warning on stderr:\n%v", r)
					}
				})
			}
		}
		// Every listed format is accepted; anything else is a usage error
		// naming them all.
		for _, v := range formats {
			fresh, _, _ := NewRootCmd().Find(ctArgs(c))
			if err := ctFormatFlag(fresh).Value.Set(v); err != nil {
				t.Errorf("lllm %s: -o %s is listed in its help but refused: %v", path, v, err)
			}
		}
		t.Run(path+" -o bogus", func(t *testing.T) {
			r := ctExec(t, 10*time.Second, "", append(slices.Clone(invs[0].args), "-o", "bogus")...)
			ctWantUsage(t, r, c.CommandPath(), append([]string{`"bogus"`}, formats...)...)
		})
	}
}

// TestContractUsageErrors: an unknown flag, a flag without its value or
// with a value of the wrong type, too few or too many arguments (by the
// command's usage line), a malformed --addr and a missing input file are
// one clear "lllm: " line on stderr, at most the usage hint after it,
// nothing on stdout, and the usage exit code, 2, for every command.
func TestContractUsageErrors(t *testing.T) {
	t.Chdir(t.TempDir()) // a command that failed to refuse writes nothing here
	for _, c := range ctCommands() {
		path := ctArgs(c)
		t.Run("lllm "+ctPath(c), func(t *testing.T) {
			r := ctExec(t, 10*time.Second, "", append(slices.Clone(path), "--no-such-flag")...)
			ctWantUsage(t, r, c.CommandPath(), "--no-such-flag")

			// A flag without its value, or an int flag given a word.
			seen := map[string]bool{}
			check := func(f *pflag.Flag) {
				if f.Hidden || seen[f.Name] || f.NoOptDefVal != "" {
					return
				}
				seen[f.Name] = true
				r := ctExec(t, 10*time.Second, "", append(slices.Clone(path), "--"+f.Name)...)
				ctWantUsage(t, r, c.CommandPath(), "--"+f.Name)
				if strings.HasPrefix(f.Value.Type(), "int") {
					r := ctExec(t, 10*time.Second, "", append(slices.Clone(path), "--"+f.Name, "lots")...)
					ctWantUsage(t, r, c.CommandPath(), "--"+f.Name, `"lots"`)
				}
			}
			c.LocalFlags().VisitAll(check)
			c.InheritedFlags().VisitAll(check)

			names, min, max := ctPositional(c)
			if min > 0 {
				args := append(slices.Clone(path), slices.Repeat([]string{"x"}, min-1)...)
				r := ctExec(t, 10*time.Second, "", args...)
				ctWantUsage(t, r, c.CommandPath())
				if len(ctLines(r.stderr)) > 0 && !strings.Contains(ctLines(r.stderr)[0], names[min-1]) {
					t.Errorf("too few arguments: the error does not say which is missing (%s): %s", names[min-1], ctLines(r.stderr)[0])
				}
			}
			if max >= 0 {
				args := append(slices.Clone(path), slices.Repeat([]string{"x"}, max+1)...)
				ctWantUsage(t, ctExec(t, 10*time.Second, "", args...), c.CommandPath())
			}
		})
	}

	// A malformed address is a bad flag value, a usage error that says
	// what is wrong with it, whatever the command does with it.
	for _, c := range ctCommands() {
		f := c.Flags().Lookup("addr")
		if f == nil {
			continue
		}
		bad := []string{"127.0.0.1:99999", "127.0.0.1:notaport"}
		if !strings.Contains(f.Usage, "URL") {
			bad = append(bad, "127.0.0.1") // HOST:PORT without its port
		}
		args := map[string][]string{
			"view":  {"view", "--open=false", "--log-dir", t.TempDir()},
			"serve": {"serve", "--config", ctConfig("serve.yaml"), "--data-dir", t.TempDir()},
			"chat":  {"chat", "assistant"},
		}[ctPath(c)]
		if args == nil {
			t.Errorf("%s has --addr but no arguments in this test: add them", c.CommandPath())
			continue
		}
		for _, addr := range bad {
			t.Run("bad --addr "+ctPath(c)+" "+addr, func(t *testing.T) {
				r := ctExec(t, 5*time.Second, "", append(slices.Clone(args), "--addr", addr)...)
				ctWantUsage(t, r, c.CommandPath(), "--addr", addr)
				if l := ctLines(r.stderr); len(l) > 0 && !strings.Contains(strings.ToLower(l[0]), "port") {
					t.Errorf("the error does not say the address lacks a valid port: %s", l[0])
				}
			})
		}
	}

	// A missing input file: the config, spec or file a command reads.
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		cmd, name string
		args      []string
		// code is the exit code; 0 accepts 1 or 2 where the docs say
		// neither (a sweep directory is no config, nor a run).
		code int
	}{
		{"run", "CONFIG", []string{"run", missing + ".yaml", "--task", "x"}, ExitUsage},
		{"run", "--tasks", []string{"run", ctConfig("chat.yaml"), "--tasks", missing + ".jsonl"}, ExitUsage},
		{"sweep", "SWEEP.yaml", []string{"sweep", missing + ".yaml"}, ExitUsage},
		{"sweep", "SWEEP.yaml --dry-run", []string{"sweep", missing + ".yaml", "--dry-run"}, ExitUsage},
		{"serve", "--config", []string{"serve", "--config", missing + ".yaml", "--addr", "127.0.0.1:0"}, ExitUsage},
		{"sweep report", "DIR", []string{"sweep", "report", missing}, 0},
		{"sweep merge", "DIR", []string{"sweep", "merge", missing}, 0},
	} {
		t.Run("missing file "+tc.cmd+" "+tc.name, func(t *testing.T) {
			r := ctExec(t, 10*time.Second, "", tc.args...)
			code := tc.code
			if code == 0 && (r.code == ExitError || r.code == ExitUsage) {
				code = r.code
			}
			ctWantFailure(t, r, code, "lllm "+tc.cmd, missing)
		})
	}
	// validate reports problems in its documented form: one per line,
	// then a count.
	t.Run("missing file validate CONFIG", func(t *testing.T) {
		r := ct(t, "validate", missing+".yaml")
		lines := ctLines(r.stderr)
		if r.code != ExitUsage || r.stdout != "" || len(lines) != 2 || !strings.Contains(lines[0], missing+".yaml") ||
			lines[1] != "lllm: "+missing+".yaml: 1 problem" {
			t.Errorf("validate of a missing file:\n%v", r)
		}
	})
}

// TestContractExitCodes: the exit codes the README, the package doc and
// every command's help give agree (0 ok, 1 a runtime failure, 2 a usage or
// config error), and commands keep to them: a failed run, a diverging
// replay, a server that cannot be reached or a port in use exit 1 with one
// line; a bad config or --set exits 2.
func TestContractExitCodes(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(ctRepo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(string(readme)), " ")
	m := regexp.MustCompile(`Exit codes: 0 ok, 1 ([^,]+), 2 usage and config errors`).FindStringSubmatch(flat)
	if m == nil || !strings.Contains(m[1], "failed") {
		t.Fatalf("the README does not give the exit codes as \"Exit codes: 0 ok, 1 a failed ..., 2 usage and config errors\"")
	}
	src, err := os.ReadFile("root.go")
	if err != nil {
		t.Fatal(err)
	}
	flatSrc := strings.Join(strings.Fields(strings.ReplaceAll(string(src), "//", "")), " ")
	if !regexp.MustCompile(`exit code is 0 on success, 1 on a runtime error \(a failed or cancelled run.*?\) and 2 on a usage or config error`).MatchString(flatSrc) {
		t.Errorf("the package doc does not give the README's exit codes")
	}
	if ExitOK != 0 || ExitError != 1 || ExitUsage != 2 {
		t.Errorf("exit codes %d %d %d, the README says 0 1 2", ExitOK, ExitError, ExitUsage)
	}
	// Every exit code a help text gives is one of those, with its meaning.
	for _, c := range ctCommands() {
		long := strings.Join(strings.Fields(c.Long), " ")
		for _, s := range regexp.MustCompile(`(?i)[^.]*\bexit[^.]*\.`).FindAllString(long, -1) {
			for _, n := range regexp.MustCompile(`\b(\d+) (when|for|on)\b([^,;]*)`).FindAllStringSubmatch(s, -1) {
				code, _ := strconv.Atoi(n[1])
				meaning := n[3]
				switch {
				case code > 2:
					t.Errorf("%s --help gives exit code %d, which the README does not: %q", c.CommandPath(), code, s)
				case code == 2 && !regexp.MustCompile(`usage|config|problem|not`).MatchString(meaning):
					t.Errorf("%s --help gives exit code 2 for %q, not a usage or config problem", c.CommandPath(), meaning)
				case code == 1 && regexp.MustCompile(`usage`).MatchString(meaning):
					t.Errorf("%s --help gives exit code 1 for a usage problem: %q", c.CommandPath(), meaning)
				}
			}
		}
	}

	f := newCtFixture(t, false)
	ld := []string{"--log-dir", f.logDir}
	failSet := []string{"--set", "mock.rules=[{match: France, reply: {error: auth}}]"}
	t.Run("failed run", func(t *testing.T) {
		r := ct(t, append(append([]string{"run", ctConfig("chat.yaml"), "--task", "Capital of France?"}, ld...), failSet...)...)
		if r.code != ExitError || len(ctLines(r.stderr)) != 1 || !strings.HasPrefix(r.stderr, "lllm: ") || !strings.Contains(r.stderr, "failed") {
			t.Errorf("want exit 1 and one line saying the run failed:\n%v", r)
		}
		r = ct(t, append(append([]string{"run", ctConfig("chat.yaml"), "--task", "Capital of France?", "-o", "json"}, ld...), failSet...)...)
		vals, err := ctDecodeJSON(r.stdout, false)
		if r.code != ExitError || err != nil || len(ctLines(r.stderr)) != 1 || vals[0].(map[string]any)["status"] != "failed" {
			t.Errorf("-o json: want exit 1, the run's JSON (status failed) on stdout and one line on stderr: %v\n%v", err, r)
		}
	})
	t.Run("diverging replay", func(t *testing.T) {
		r := ct(t, append([]string{"replay", f.chat, "--set", "agent_configs.assistant.system_prompt_path=", "--set",
			"agent_configs.assistant.system_prompt=You are verbose."}, ld...)...)
		if r.code != ExitError || len(ctLines(r.stderr)) != 1 || !strings.Contains(r.stderr, "diverged") {
			t.Errorf("want exit 1 and one line saying the replay diverged:\n%v", r)
		}
	})
	t.Run("no server", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := ln.Addr().String()
		ln.Close()
		ctWantFailure(t, ctExec(t, 10*time.Second, "hello\n", "chat", "assistant", "--addr", dead), ExitError, "", dead)
	})
	t.Run("port in use", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		busy := ln.Addr().String()
		ctWantFailure(t, ctExec(t, 10*time.Second, "", "view", "--addr", busy, "--open=false", "--log-dir", f.logDir), ExitError, "", busy)
		ctWantFailure(t, ctExec(t, 10*time.Second, "", "serve", "--addr", busy, "--config", f.serveCfg, "--data-dir", t.TempDir()), ExitError, "", busy)
	})
	t.Run("set without a value", func(t *testing.T) {
		// Every command with --set, with arguments that are right but for it.
		args := map[string][]string{
			"run":      append([]string{"run", ctConfig("chat.yaml"), "--task", "x"}, ld...),
			"validate": {"validate", ctConfig("chat.yaml")},
			"replay":   append([]string{"replay", f.chat}, ld...),
			"sweep":    append([]string{"sweep", f.spec, "--dry-run"}, ld...),
		}
		for _, c := range ctCommands() {
			if c.Flags().Lookup("set") == nil {
				continue
			}
			a, ok := args[ctPath(c)]
			if !ok {
				t.Errorf("%s has --set but no arguments in this test: add them", c.CommandPath())
				continue
			}
			ctWantUsage(t, ct(t, append(slices.Clone(a), "--set", "nokey")...), c.CommandPath(), `"nokey"`, "KEY.PATH=VALUE")
		}
	})
	t.Run("config errors", func(t *testing.T) {
		bad := []string{"--set", "global.model_nme=x"}
		for _, args := range [][]string{
			append([]string{"run", ctConfig("chat.yaml"), "--task", "x"}, ld...),
			{"validate", ctConfig("chat.yaml")},
			append([]string{"replay", f.chat}, ld...),
			append([]string{"sweep", f.spec, "--dry-run"}, ld...),
		} {
			r := ct(t, append(args, bad...)...)
			if r.code != ExitUsage || r.stdout != "" || !strings.Contains(r.stderr, "model_nme") {
				t.Errorf("%s with a bad --set: want exit 2 naming the key, nothing on stdout:\n%v", args[0], r)
			}
		}
	})
}

// ctRunIDs matches run ids.
var ctRunIDs = regexp.MustCompile(`\d{8}T\d{6}\.\d{6}Z-[0-9a-f]{6}`)

// TestContractRunArgument: every command that takes a RUN takes it as the
// docs say, as a run id, a unique prefix or suffix of one, "latest", a run
// directory (relative, absolute, with a trailing slash, in another log
// root) or its events.jsonl, and prints the same; an unknown RUN is one
// line saying how to list the runs; and a replay of a run given by its
// directory writes its log under that run's log root, as its help says.
func TestContractRunArgument(t *testing.T) {
	tmpl := t.TempDir()
	id := ctRunID(t, "run", ctConfig("chat.yaml"), "--task", "Capital of France?", "--log-dir", filepath.Join(tmpl, "logs"))
	// fresh is a working directory holding a copy of the log root, as
	// ./logs; a replay adds runs to it.
	fresh := func(t *testing.T) string {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(tmpl)); err != nil {
			t.Fatal(err)
		}
		t.Chdir(dir)
		return dir
	}
	normalize := func(s string) string {
		return ctRunIDs.ReplaceAllStringFunc(s, func(x string) string {
			if x == id {
				return x
			}
			return "<another run>"
		})
	}
	var n int
	for _, c := range ctCommands() {
		names, _, _ := ctPositional(c)
		var runPos []int
		for i, name := range names {
			if ctRunLike(name) {
				runPos = append(runPos, i)
			}
		}
		if len(runPos) == 0 {
			continue
		}
		n++
		path := ctPath(c)
		args := func(ref string) []string {
			a := ctArgs(c)
			for range runPos {
				a = append(a, ref)
			}
			return a
		}
		var want string
		t.Run(path+" by id", func(t *testing.T) {
			fresh(t)
			r := ct(t, args(id)...)
			if r.code != 0 {
				t.Fatalf("%v", r)
			}
			want = normalize(r.stdout)
		})
		if want == "" {
			continue
		}
		for _, form := range []struct {
			name string
			ref  func(dir string) string
		}{
			{"unique prefix", func(string) string { return id[:len(id)-2] }},
			{"unique suffix", func(string) string { return id[len(id)-6:] }},
			{"latest", func(string) string { return "latest" }},
			{"relative run directory", func(string) string { return filepath.Join("logs", id) }},
			{"run directory with a slash", func(string) string { return filepath.Join("logs", id) + "/" }},
			{"absolute run directory", func(dir string) string { return filepath.Join(dir, "logs", id) }},
			{"relative events.jsonl", func(string) string { return filepath.Join("logs", id, logs.EventsFile) }},
			{"absolute events.jsonl", func(dir string) string { return filepath.Join(dir, "logs", id, logs.EventsFile) }},
		} {
			t.Run(path+" by "+form.name, func(t *testing.T) {
				dir := fresh(t)
				r := ct(t, args(form.ref(dir))...)
				if r.code != 0 || normalize(r.stdout) != want {
					t.Errorf("%v\nwant the stdout given by the run id:\n%s", r, want)
				}
			})
		}
		t.Run(path+" by a run directory in another log root", func(t *testing.T) {
			elsewhere := t.TempDir()
			if err := os.CopyFS(elsewhere, os.DirFS(tmpl)); err != nil {
				t.Fatal(err)
			}
			t.Chdir(t.TempDir())
			r := ct(t, append(args(filepath.Join(elsewhere, "logs", id)), "--log-dir", t.TempDir())...)
			if r.code != 0 || normalize(r.stdout) != want {
				t.Errorf("%v\nwant the stdout given by the run id:\n%s", r, want)
			}
		})
		for i := range runPos {
			t.Run(fmt.Sprintf("%s unknown RUN (argument %d)", path, i+1), func(t *testing.T) {
				fresh(t)
				a := args(id)
				a[len(ctArgs(c))+i] = "nosuchrun"
				ctWantFailure(t, ct(t, a...), ExitError, "", `"nosuchrun"`, "lllm runs")
				if ctFormatFlag(c) != nil {
					// With -o json too: the error is no JSON on stdout.
					ctWantFailure(t, ct(t, append(a, "-o", "json")...), ExitError, "", `"nosuchrun"`, "lllm runs")
				}
			})
		}
	}
	if n < 4 {
		t.Errorf("only %d commands take a RUN; tree, show, diff and replay do", n)
	}

	// "A replay writes a run log of its own ... under the same log root":
	// the recorded run's, not ./logs of wherever it was typed.
	t.Run("replay of a run directory writes beside it", func(t *testing.T) {
		elsewhere := t.TempDir()
		if err := os.CopyFS(elsewhere, os.DirFS(tmpl)); err != nil {
			t.Fatal(err)
		}
		cwd := t.TempDir()
		t.Chdir(cwd)
		r := ct(t, "replay", filepath.Join(elsewhere, "logs", id), "-o", "json")
		if r.code != 0 {
			t.Fatalf("%v", r)
		}
		var out struct {
			RunID string `json:"run_id"`
		}
		_ = json.Unmarshal([]byte(r.stdout), &out)
		if _, err := os.Stat(filepath.Join(elsewhere, "logs", out.RunID, logs.EventsFile)); err != nil {
			t.Errorf("the replay %s is not under the recorded run's log root %s: %v", out.RunID, filepath.Join(elsewhere, "logs"), err)
		}
		if entries, _ := os.ReadDir(cwd); len(entries) > 0 {
			t.Errorf("the replay wrote into the current directory: %v", entries)
		}
	})
}

// TestContractNoWritesToCWD: no command writes into the current directory
// unless told to. Given paths elsewhere, every command leaves it empty;
// the commands that record runs with no --log-dir write only the
// documented default log root, ./logs.
func TestContractNoWritesToCWD(t *testing.T) {
	f := newCtFixture(t, true)
	addr := ctServe(t, "--config", f.serveCfg, "--data-dir", filepath.Join(f.dir, "served"))
	cwd := t.TempDir()
	t.Chdir(cwd)
	ld := []string{"--log-dir", f.logDir}
	runDir := func(id string) string { return filepath.Join(f.logDir, id) }
	table := map[string][]ctInvocation{
		"help":         {{args: []string{"help", "sweep", "report"}}},
		"version":      {{args: []string{"version"}}, {args: []string{"--version"}}},
		"runs":         {{args: []string{"runs"}}, {args: append([]string{"runs", "-o", "json"}, ld...)}},
		"validate":     {{args: []string{"validate", ctConfig("quickstart.yaml")}}, {args: []string{"validate", f.spec}}, {args: []string{"validate", f.serveCfg}}},
		"run":          {{args: append([]string{"run", ctConfig("chat.yaml"), "--task", "Capital of France?"}, ld...)}},
		"tree":         {{args: []string{"tree", runDir(f.best)}}, {args: []string{"tree", runDir(f.best), "-o", "dot"}}},
		"show":         {{args: []string{"show", runDir(f.best)}}},
		"diff":         {{args: []string{"diff", runDir(f.chat), runDir(f.best)}}},
		"replay":       {{args: append([]string{"replay", f.best}, ld...)}},
		"export":       {{args: []string{"export", runDir(f.best)}}, {args: []string{"export", "--sweep", f.sweepDir, "--metadata"}}},
		"sweep":        {{args: []string{"sweep", f.spec, "--dry-run"}}, {args: append([]string{"sweep", f.spec}, ld...)}},
		"sweep report": {{args: []string{"sweep", "report", f.sweepDir, "-o", "csv"}}},
		"sweep merge":  {{args: []string{"sweep", "merge", f.sweepDir}}},
		"view":         {{args: []string{"view", "--addr", "127.0.0.1:0", "--open=false"}, timeout: 500 * time.Millisecond}},
		"serve":        {{args: []string{"serve", "--addr", "127.0.0.1:0", "--config", f.serveCfg}, timeout: time.Second}},
		"chat":         {{args: []string{"chat", "assistant", "--addr", addr}, stdin: "Hello there.\n/history\n"}},
	}
	for _, c := range ctCommands() {
		path := ctPath(c)
		invs, ok := table[path]
		if !ok {
			if _, min, _ := ctPositional(c); min > 0 {
				t.Errorf("lllm %s needs arguments but has no invocation in the table of TestContractNoWritesToCWD: add one", path)
				continue
			}
			invs = []ctInvocation{{args: ctArgs(c), timeout: 5 * time.Second}}
		}
		for _, inv := range invs {
			r := ctExec(t, inv.timeout, inv.stdin, inv.args...)
			if inv.timeout == 0 && r.code != 0 {
				t.Errorf("lllm %s failed:\n%v", strings.Join(inv.args, " "), r)
			}
			if entries, _ := os.ReadDir(cwd); len(entries) > 0 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
					_ = os.RemoveAll(filepath.Join(cwd, e.Name()))
				}
				t.Errorf("lllm %s wrote %v into the current directory", strings.Join(inv.args, " "), names)
			}
		}
	}

	// With no --log-dir, the commands that record runs use ./logs, and
	// nothing else.
	for _, args := range [][]string{
		{"run", ctConfig("chat.yaml"), "--task", "Capital of France?"},
		{"run", ctConfig("chat.yaml"), "--tasks", f.tasks},
		{"replay", "latest"},
		{"sweep", f.spec},
	} {
		if r := ct(t, args...); r.code != 0 {
			t.Errorf("lllm %s failed:\n%v", strings.Join(args, " "), r)
		}
		entries, _ := os.ReadDir(cwd)
		if len(entries) != 1 || entries[0].Name() != logs.DefaultRoot || !entries[0].IsDir() {
			t.Errorf("lllm %s: the current directory holds %v, want only %s/", strings.Join(args, " "), entries, logs.DefaultRoot)
		}
	}
}
