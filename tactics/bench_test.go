package tactics

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
)

// BenchmarkCallOverhead compares one model call made by an Agent (working
// fork, request digest, adapter, reply appended to two dialogs), without
// and with every event written to a run log on disk, with the same call
// made directly with the langchaingo OpenAI client, all against one local
// OpenAI-wire server. The interleaved subtests alternate the three so that
// machine drift cancels, and report their ratios: for Respond alone (the
// model call) and for the benchmark's whole turn, which adds the fork that
// resets the dialog to the same ten messages and its Close.
func BenchmarkCallOverhead(b *testing.B) {
	srv := providertest.NewOpenAIServer(b)
	srv.SetMaxRecorded(1)
	srv.SetDefault(benchReply)
	paths := callPaths(b, srv.BaseURL())
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := p.call(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The server in this process answers at once, the harshest case for
	// the ratio, and after a millisecond, still far quicker than any real
	// model.
	for _, latency := range []time.Duration{0, time.Millisecond} {
		name := "interleaved"
		if latency > 0 {
			name += "-" + latency.String()
		}
		b.Run(name, func(b *testing.B) {
			r := benchReply
			r.Delay = latency
			srv.SetDefault(r)
			interleave(b, paths)
		})
	}
	// A server in its own process, as a local model server is, answering
	// at once: the garbage collector and scheduler of this process then
	// serve the caller alone.
	process := callPaths(b, serverProcess(b))
	b.Run("interleaved-process", func(b *testing.B) { interleave(b, process) })
}

// benchReply is what the benchmarks' servers answer.
var benchReply = providertest.Reply{Text: "The answer is 4, because two and two make four.",
	Usage: providertest.Usage{Input: 420, Output: 12}}

// callPath is one way to make the benchmark's model call; call reports
// how long its model call (Respond, for an agent) took.
type callPath struct {
	name string
	call func() (time.Duration, error)
}

// callPaths are the three ways to call the server at baseURL: the
// langchaingo client directly, an agent, and an agent with a run log.
func callPaths(b *testing.B, baseURL string) []callPath {
	direct := directCall(b, baseURL)
	return []callPath{
		{"langchaingo", func() (time.Duration, error) {
			start := time.Now()
			err := direct()
			return time.Since(start), err
		}},
		{"agent", agentCall(b, openBenchModel(b, baseURL), benchLog(b, "no-log"))},
		{"agent+log", agentCall(b, openBenchModel(b, baseURL), benchLog(b, "log-file"))},
	}
}

// interleave makes each path's calls in turn, in blocks of interleaveBlock
// calls, b.N blocks each, and reports the agents' ratios to the direct
// call: of the total times (what the framework costs in all), of the
// median calls (a typical call, unmoved by the rare call a busy machine
// stalls), and of this process's CPU time per block (with the server in
// another process, the caller's own work, whatever the scheduler does
// with the wall clock).
func interleave(b *testing.B, paths []callPath) {
	turn := make([]time.Duration, len(paths))
	cpu := make([]time.Duration, len(paths))
	respond := make([][]time.Duration, len(paths))
	// Each round takes the paths in a new random order: a path's calls
	// are slower after some paths than after others (the direct client
	// leaves the caches and the scheduler as a fresh process would; the
	// log's flush runs into the next block), by up to 5 points.
	order := rand.New(rand.NewPCG(1, 2))
	for b.Loop() {
		for _, i := range order.Perm(len(paths)) {
			p := paths[i]
			c0, measured := processCPU()
			for range interleaveBlock {
				start := time.Now()
				r, err := p.call()
				if err != nil {
					b.Fatal(err)
				}
				turn[i] += time.Since(start)
				respond[i] = append(respond[i], r)
			}
			if c1, ok := processCPU(); ok && measured {
				cpu[i] += c1 - c0
			}
		}
	}
	total := make([]time.Duration, len(paths))
	median := make([]time.Duration, len(paths))
	for i, rs := range respond {
		for _, r := range rs {
			total[i] += r
		}
		slices.Sort(rs)
		median[i] = rs[len(rs)/2]
	}
	b.ReportMetric(float64(total[1])/float64(total[0]), "agent/direct")
	b.ReportMetric(float64(total[2])/float64(total[0]), "agent+log/direct")
	b.ReportMetric(float64(median[1])/float64(median[0]), "agent/direct-p50")
	b.ReportMetric(float64(median[2])/float64(median[0]), "agent+log/direct-p50")
	b.ReportMetric(float64(turn[2])/float64(turn[0]), "agent+log-turn/direct")
	if cpu[0] > 0 {
		b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "agent/direct-cpu")
		b.ReportMetric(float64(cpu[2])/float64(cpu[0]), "agent+log/direct-cpu")
	}
}

// interleaveBlock is how many calls a path makes before the next path's
// turn. Blocks, not single calls, so that what a path leaves running in
// the background (the log's flush) slows its own calls, not mostly the
// next path's first; short enough that machine drift still cancels.
const interleaveBlock = 16

// benchServerEnv, when set, makes the test binary serve benchReply on the
// OpenAI wire instead of running tests, until its standard input closes:
// the separate server process of BenchmarkCallOverhead.
const benchServerEnv = "LLLM_BENCH_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(benchServerEnv) != "" {
		srv := providertest.StartOpenAIServer()
		srv.SetMaxRecorded(1)
		srv.SetDefault(benchReply)
		fmt.Println(srv.BaseURL())
		_, _ = io.Copy(io.Discard, os.Stdin)
		srv.Close()
		return
	}
	os.Exit(m.Run())
}

// serverProcess starts this test binary as a benchmark server in a child
// process, stopped when b ends, and returns its base URL.
func serverProcess(b *testing.B) string {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchServerEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("starting the benchmark server: %v", err)
	}
	b.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("reading the benchmark server's address: %v", err)
	}
	return strings.TrimSpace(line)
}

// benchSystem and benchTurns are the 10-message dialog every call path of
// the benchmarks sends: a system prompt and nine turns.
const benchSystem = "You are a careful assistant. Answer in one sentence."

var benchTurns = func() []string {
	turns := make([]string, 9)
	for i := range turns {
		turns[i] = fmt.Sprintf("Turn %d: %s", i, strings.Repeat("some words of context ", 8))
	}
	return turns
}()

func directCall(b *testing.B, baseURL string) func() error {
	llm, err := openai.New(openai.WithToken("sk-test"), openai.WithBaseURL(baseURL),
		openai.WithModel("gpt-4o-mini"), openai.WithHTTPClient(&http.Client{}))
	if err != nil {
		b.Fatal(err)
	}
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, benchSystem)}
	for i, t := range benchTurns {
		typ := llms.ChatMessageTypeHuman
		if i%2 == 1 {
			typ = llms.ChatMessageTypeAI
		}
		msgs = append(msgs, llms.TextParts(typ, t))
	}
	return func() error {
		_, err := llm.GenerateContent(context.Background(), msgs)
		return err
	}
}

func openBenchModel(b *testing.B, baseURL string) provider.Model {
	model, err := provider.Open(context.Background(), "openai/gpt-4o-mini", provider.Config{BaseURL: baseURL, HTTPClient: &http.Client{}})
	if err != nil {
		b.Fatal(err)
	}
	return model
}

// benchLog is the log of a benchmark's agent: none ("no-log"), one whose
// records are encoded and discarded ("log-encoded"), or a run log on disk
// ("log-file").
func benchLog(b *testing.B, mode string) Log {
	switch mode {
	case "log-encoded":
		w, err := logs.NewWriter(io.Discard, logs.RunStart{Tactic: "bench"}, logs.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return w
	case "log-file":
		w, _, err := logs.Create(b.TempDir(), logs.RunStart{Tactic: "bench"}, logs.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { w.Close() })
		return w
	}
	return nil
}

// agentCall returns one turn of an agent on model, logging to log, over
// the benchmark's 10 messages: a fork of its base dialog, Respond, and
// Close. The turn reports how long its Respond took.
func agentCall(b *testing.B, model provider.Model, log Log) func() (time.Duration, error) {
	ctx := context.Background()
	a := &Agent{Name: "bench", System: dialog.MustPrompt("sys", benchSystem), Model: model,
		ModelName: "openai/gpt-4o-mini", Limits: DefaultLimits(), Log: log}
	if err := a.Open("base", nil); err != nil {
		b.Fatal(err)
	}
	base, _ := a.Dialog("base")
	for i, t := range benchTurns {
		var err error
		if i%2 == 1 {
			_, err = base.Append(dialog.Message{Role: dialog.RoleAssistant, Content: t})
		} else {
			err = a.Receive(t)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	return func() (time.Duration, error) {
		if err := a.Fork("base", "turn", 0, 0, true); err != nil {
			return 0, err
		}
		start := time.Now()
		_, _, err := a.Respond(ctx)
		took := time.Since(start)
		if err != nil {
			return took, err
		}
		return took, a.Close("turn")
	}
}

// instantModel answers at once, so that a benchmark measures the
// framework alone.
type instantModel struct{}

func (instantModel) Generate(context.Context, *provider.Request) (*provider.Response, error) {
	return &provider.Response{Message: dialog.Message{Role: dialog.RoleAssistant,
		Content: "The answer is 4, because two and two make four.",
		Usage:   dialog.Usage{InputTokens: 420, OutputTokens: 12}}}, nil
}

// BenchmarkRespondFrameworkOnly is the absolute cost of the framework
// around one model call, with a model that answers at once: the same turn
// as BenchmarkCallOverhead (a fork of a 10-message dialog, Respond, Close)
// without a log, with the log's records encoded but discarded, and with
// them written to a log file.
func BenchmarkRespondFrameworkOnly(b *testing.B) {
	for _, mode := range []string{"no-log", "log-encoded", "log-file"} {
		b.Run(mode, func(b *testing.B) {
			call := agentCall(b, instantModel{}, benchLog(b, mode))
			for b.Loop() {
				if _, err := call(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
