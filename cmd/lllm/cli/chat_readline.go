package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chzyer/readline"
)

// chatCommandList are the slash commands of lllm chat, as /help and
// --help list them, one line each.
var chatCommandList = []struct{ usage, does string }{
	{"/guest NAME TEXT", "send TEXT to be answered by the guest agent NAME"},
	{"/compact", "summarise the conversation so far into an archive"},
	{"/archives", "list the conversation's archives"},
	{"/history", "print the live history, with the questions asked and failed runs"},
	{"/search [--all] TEXT", "find TEXT here and in the archives (--all: every sender's too)"},
	{"/read", "mark every reply read, sending nothing (sending marks them too)"},
	{"/delete [--yes]", "delete this conversation (into the server's trash) and leave"},
	{"/kill", "cancel the reply in progress (also while it streams)"},
	{"/help", "list the commands"},
	{"/quit", "leave (so do /exit and the end of the input)"},
}

// chatCommandsHelp lists the slash commands, one a line, each line
// starting with indent.
func chatCommandsHelp(indent string) string {
	var b strings.Builder
	for i, c := range chatCommandList {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s%-21s %s", indent, c.usage, c.does)
	}
	return b.String()
}

// chatCommands are the slash commands of lllm chat, for tab completion.
var chatCommands = []string{"/guest", "/compact", "/archives", "/history", "/search", "/read", "/delete", "/kill", "/help", "/quit", "/exit"}

// chatCommandOptions are the options tab completion offers after a
// command.
var chatCommandOptions = map[string][]string{
	"/search": {"--all", "--limit"},
	"/delete": {"--yes"},
}

// chatPrompt is what lllm chat shows where it waits for a line on a
// terminal.
const chatPrompt = "> "

// chatHistoryLimit is how many lines the chat history keeps.
const chatHistoryLimit = 1000

// chatHistoryDir is the folder, under the user cache directory, of the
// files the lines typed in lllm chat are kept in, one per agent. (Earlier
// versions kept one file for every agent, lllm/chat_history, which is
// left as it is.)
const chatHistoryDir = "chat_histories"

// chatHistoryPath is the file the lines typed to agent in lllm chat are
// kept in, whatever the server and the sender: the agent's own, so that
// Up and Ctrl-R find what was said to it.
func chatHistoryPath(agent string) (string, error) {
	if agent == "" {
		return "", errors.New("no agent to keep a chat history for")
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "lllm", chatHistoryDir, historyFileName(agent)), nil
}

// historyFileName is the name of agent's history file: agent with every
// byte but ASCII letters, digits, '_' and '-' written %XX (so that no
// name leaves the folder, hides the file or names a device, and two
// agents never share a file), then ".history". A name too long for a file
// system is cut, with a hash of the whole name kept.
func historyFileName(agent string) string {
	var b strings.Builder
	for i := 0; i < len(agent); i++ {
		c := agent[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	name := b.String()
	if windowsDevice(name) {
		name = fmt.Sprintf("%%%02X", name[0]) + name[1:]
	}
	const most = 200
	if len(name) > most {
		sum := sha256.Sum256([]byte(agent))
		name = name[:most-17] + "-" + hex.EncodeToString(sum[:8])
	}
	return name + ".history"
}

// windowsDevice reports whether name is one Windows reserves for a
// device, with any extension: CON, PRN, AUX, NUL, COM1 to COM9, LPT1 to
// LPT9.
func windowsDevice(name string) bool {
	switch u := strings.ToUpper(name); u {
	case "CON", "PRN", "AUX", "NUL":
		return true
	default:
		return len(u) == 4 && (strings.HasPrefix(u, "COM") || strings.HasPrefix(u, "LPT")) && u[3] >= '1' && u[3] <= '9'
	}
}

// useLineEditing tells whether lllm chat reads with line editing: only
// when a person types at a terminal and reads the replies there.
func useLineEditing(in io.Reader, out io.Writer) bool {
	return isTerminal(in) && isTerminal(out)
}

// chatCompleter completes the slash commands, the agent names after
// /guest and the options of /search and /delete.
func chatCompleter(guests []string) readline.AutoCompleter {
	var items []readline.PrefixCompleterInterface
	for _, c := range chatCommands {
		var sub []readline.PrefixCompleterInterface
		if c == "/guest" {
			for _, g := range guests {
				sub = append(sub, readline.PcItem(g))
			}
		}
		for _, o := range chatCommandOptions[c] {
			sub = append(sub, readline.PcItem(o))
		}
		items = append(items, readline.PcItem(c, sub...))
	}
	return readline.NewPrefixCompleter(items...)
}

// chatHistory appends the lines typed to the history file. It never fails
// the chat: the first error is a warning, and the file is then left alone.
type chatHistory struct {
	path string
	f    *os.File
	last string
	errw io.Writer
}

// openChatHistory opens (creating it 0600, in a 0700 directory) the
// history file at path and returns it with its last lines, oldest first.
// When the file cannot be used it warns and returns nil.
func openChatHistory(path string, errw io.Writer) (*chatHistory, []string) {
	h := &chatHistory{path: path, errw: errw}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		h.warn(err)
		return nil, nil
	}
	lines, err := readHistoryLines(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		h.warn(err)
		return nil, nil
	}
	if len(lines) > chatHistoryLimit {
		lines = lines[len(lines)-chatHistoryLimit:]
		// Keep the file from growing without end.
		if err := rewriteHistory(path, lines); err != nil {
			h.warn(err)
			return nil, lines
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		h.warn(err)
		return nil, lines
	}
	h.f = f
	if len(lines) > 0 {
		h.last = lines[len(lines)-1]
	}
	return h, lines
}

func readHistoryLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	r := bufio.NewReader(f)
	for {
		l, err := r.ReadString('\n')
		if l = strings.TrimRight(l, "\r\n"); strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
		if errors.Is(err, io.EOF) {
			return lines, nil
		}
		if err != nil {
			return lines, err
		}
	}
}

func rewriteHistory(path string, lines []string) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, l := range lines {
		w.WriteString(l)
		w.WriteByte('\n')
	}
	err = w.Flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// add appends a line, unless it repeats the one before.
func (h *chatHistory) add(line string) {
	if h == nil || h.f == nil || strings.TrimSpace(line) == "" || line == h.last {
		return
	}
	h.last = line
	if _, err := h.f.WriteString(line + "\n"); err != nil {
		h.warn(err)
		_ = h.f.Close()
		h.f = nil
	}
}

func (h *chatHistory) warn(err error) {
	fmt.Fprintf(h.errw, "lllm: warning: cannot keep the chat history in %s: %s (the chat goes on without it; --no-history silences this)\n", h.path, oneLine(err.Error()))
}

func (h *chatHistory) close() {
	if h != nil && h.f != nil {
		_ = h.f.Close()
		h.f = nil
	}
}

// lineNeed is what the chat waits for from the terminal.
type lineNeed int

const (
	needNone   lineNeed = iota // a reply streams: no prompt
	needNext                   // the next message or command
	needAnswer                 // the answer to an agent's question
)

// termReader reads the lines of lllm chat at a terminal, with line
// editing, history and completion. It shows the prompt and puts the
// terminal in raw mode only while the chat waits for a line; while a reply
// streams the terminal is left as it is, so that nothing redraws a prompt
// in the middle of the reply and Ctrl-C is the signal it always was. A
// line typed meanwhile (the terminal echoes it) is read once complete, so
// that /kill still works.
type termReader struct {
	rl     *readline.Instance
	stdin  *readline.CancelableStdin
	in     *os.File
	out    *promptWriter
	hist   *chatHistory
	cancel context.CancelFunc

	mu   sync.Mutex
	need lineNeed

	interrupted atomic.Bool
	carry       string // a part of a line the terminal handed over without its end
}

type termReaderOptions struct {
	in, out *os.File
	errw    io.Writer
	// agent is the agent the chat talks with, whose history file the
	// lines typed go to.
	agent     string
	guests    []string
	noHistory bool
	cancel    context.CancelFunc
}

func newTermReader(o termReaderOptions) (*termReader, error) {
	r := &termReader{in: o.in, cancel: o.cancel}
	var past []string
	if !o.noHistory {
		path, err := chatHistoryPath(o.agent)
		if err != nil {
			(&chatHistory{path: "the user cache directory", errw: o.errw}).warn(err)
		} else {
			r.hist, past = openChatHistory(path, o.errw)
		}
	}
	inFd, outFd := int(o.in.Fd()), int(o.out.Fd())
	var raw *readline.State
	r.stdin = readline.NewCancelableStdin(o.in)
	r.out = &promptWriter{direct: o.out}
	cfg := &readline.Config{
		Prompt:                 chatPrompt,
		Stdin:                  r.stdin,
		Stdout:                 o.out,
		Stderr:                 o.out,
		AutoComplete:           chatCompleter(o.guests),
		HistoryLimit:           chatHistoryLimit,
		DisableAutoSaveHistory: true, // the history file is chatHistory's
		HistorySearchFold:      true,
		FuncIsTerminal:         func() bool { return true },
		FuncMakeRaw: func() (err error) {
			raw, err = readline.MakeRaw(inFd)
			return err
		},
		FuncExitRaw: func() error {
			if raw == nil {
				return nil
			}
			err := readline.Restore(inFd, raw)
			raw = nil
			return err
		},
		FuncGetWidth: func() int {
			w, _, err := readline.GetSize(outFd)
			if err != nil {
				return -1
			}
			return w
		},
	}
	rl, err := readline.NewEx(cfg)
	if err != nil {
		r.stdin.Close()
		r.hist.close()
		return nil, err
	}
	r.rl = rl
	r.out.rl = rl
	for _, l := range past {
		_ = rl.SaveHistory(l)
	}
	return r, nil
}

// want says that the chat waits for a line.
func (r *termReader) want(n lineNeed) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.need = n
	r.mu.Unlock()
}

// got says that the chat received a line.
func (r *termReader) got() { r.want(needNone) }

func (r *termReader) wanted() lineNeed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.need
}

// wasInterrupted tells whether Ctrl-C interrupted a reply at the prompt.
func (r *termReader) wasInterrupted() bool {
	return r != nil && r.interrupted.Load()
}

func (r *termReader) close() {
	if r == nil {
		return
	}
	r.stdin.Close()
	_ = r.rl.Close()
	r.hist.close()
}

// run reads lines into lines until the input ends, Ctrl-D or Ctrl-C on an
// empty line, or ctx is done, then closes lines. A read error is in
// *readErr by then.
func (r *termReader) run(ctx context.Context, lines chan<- string, readErr *error) {
	defer close(lines)
	send := func(l string) bool {
		l, r.carry = r.carry+l, ""
		if len(l) > maxChatLine {
			*readErr = fmt.Errorf("reading the input: a line is longer than %d MiB; nothing after it was sent", maxChatLine>>20)
			return false
		}
		if t := strings.TrimSpace(l); t != "" {
			_ = r.rl.SaveHistory(t)
			r.hist.add(t)
		}
		r.got()
		select {
		case lines <- l:
			return true
		case <-ctx.Done():
			return false
		}
	}
	buf := make([]byte, 64<<10)
	for ctx.Err() == nil {
		if r.wanted() == needNone {
			ready, err := waitReadable(r.in, 50*time.Millisecond)
			if err != nil { // cannot tell: the line waits for the prompt
				time.Sleep(50 * time.Millisecond)
				continue
			}
			if !ready || r.wanted() != needNone {
				continue
			}
			n, err := r.in.Read(buf)
			if n == 0 || err != nil {
				if err != nil && !errors.Is(err, io.EOF) {
					*readErr = fmt.Errorf("reading the input: %w", err)
				}
				return // end of input (Ctrl-D): the reply finishes
			}
			r.carry += string(buf[:n])
			for {
				i := strings.IndexByte(r.carry, '\n')
				if i < 0 {
					break
				}
				l := strings.TrimSuffix(r.carry[:i], "\r")
				r.carry = r.carry[i+1:]
				if !send(l) {
					return
				}
			}
			continue
		}
		r.out.setReading(true)
		line, err := r.rl.Readline()
		r.out.setReading(false)
		switch {
		case err == nil:
			if !send(line) {
				return
			}
		case errors.Is(err, readline.ErrInterrupt):
			if strings.TrimSpace(line) != "" {
				continue // Ctrl-C drops the line typed
			}
			if r.wanted() == needAnswer && ctx.Err() == nil {
				// A reply waits for the answer: Ctrl-C interrupts, as
				// it does while the reply streams.
				r.interrupted.Store(true)
				r.cancel()
			}
			return
		case errors.Is(err, io.EOF):
			return
		default:
			if ctx.Err() == nil {
				*readErr = fmt.Errorf("reading the input: %w", err)
			}
			return
		}
	}
}

// promptWriter is where the chat prints while readline may be showing the
// prompt: then it prints whole lines only, through readline, which clears
// the prompt and draws it again below them; the rest of a line waits for
// its end or for the prompt to go.
type promptWriter struct {
	mu      sync.Mutex
	direct  io.Writer
	rl      *readline.Instance
	reading bool
	pending []byte
}

func (w *promptWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.reading {
		return w.direct.Write(p)
	}
	w.pending = append(w.pending, p...)
	if i := bytes.LastIndexByte(w.pending, '\n'); i >= 0 {
		_, err := w.rl.Stdout().Write(w.pending[:i+1])
		w.pending = append(w.pending[:0], w.pending[i+1:]...)
		if err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (w *promptWriter) setReading(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reading = on
	if !on && len(w.pending) > 0 {
		_, _ = w.direct.Write(w.pending)
		w.pending = nil
	}
}
