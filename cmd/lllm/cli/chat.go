package cli

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/internal/suggest"
	"github.com/lllm-go/lllm/runtime/conversation"
	"github.com/lllm-go/lllm/runtime/server"
)

type chatOptions struct {
	sender, guest, addr, tokenEnv string
	format                        *enumValue
	noHistory, reasoning          bool
}

func newChatCmd() *cobra.Command {
	o := &chatOptions{format: newEnum("text", "text", "json")}
	cmd := &cobra.Command{
		Use:   "chat AGENT",
		Short: "Talk with an agent of a running lllm serve",
		Long: `Talk with AGENT through a running lllm serve: each line you type is sent,
and the reply is printed as it streams. The conversation is the server's
(one per agent and sender), so it carries on across chats and restarts.

Slash commands:
` + chatCommandsHelp("  ") + `

When the agent asks you something (ask_user), the next line you type is
the answer. /search looks in this conversation and its archives (with
--all, in every conversation of AGENT) and shows the first 20 matches
(/search --limit N TEXT: up to N, at most 200). /delete asks you to type
your sender name or yes first; with piped input it needs /delete --yes.
Once the conversation is deleted the chat ends. With -o json every event
is printed as one JSON line (a reply's reasoning included); --reasoning
prints the reasoning of a model that shows its thinking as it streams,
after "[thinking]", and the reply on the next line. A line may be up to
1 MiB. The exit status
is 1 when anything failed during the session (a refused message or
command, a reply that failed, a line too long), else 0.

At a terminal (stdin and stdout both), the "> " prompt has line editing:
arrows, Home/End, Ctrl-W and the like; Up and Down walk the history,
Ctrl-R searches it, and Tab completes the slash commands, their options
and the guests AGENT admits after /guest. Ctrl-D, or Ctrl-C on an empty prompt,
leaves; Ctrl-C while a reply streams interrupts the chat (exit status 1).
The lines typed are kept, for each agent, in lllm/chat_histories/AGENT.history
under the user cache directory (~/.cache on Linux), readable by you only;
--no-history keeps nothing. Piped input is read as it is, with no prompt
and no history. The run logs of the turns are the server's (see lllm serve).`,
		Example: `  lllm chat assistant --sender alice

  # Every reply from the guest critic, on another server
  lllm chat assistant --guest critic --addr 127.0.0.1:9000

  # Scripted, one JSON event per line
  printf 'hello\n/compact\n' | lllm chat assistant -o json

  # Keep no history of what you type
  lllm chat assistant --no-history

  # Show a thinking model's reasoning before each reply
  lllm chat assistant --reasoning`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch len(args) {
			case 0:
				return usageErrorf(cmd, "chat needs an AGENT: the name of an agent the server serves (GET /v1/agents)")
			case 1:
				return nil
			}
			return usageErrorf(cmd, "chat takes one AGENT, got %d arguments", len(args))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runChat(cmd, o, args[0])
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.sender, "sender", server.DefaultSender, "who you are: the `NAME` the conversation is kept under")
	fs.StringVar(&o.guest, "guest", "", "have the guest agent `NAME` answer every message")
	fs.StringVar(&o.addr, "addr", DefaultServeAddr, "the server's `HOST:PORT` (or URL)")
	fs.StringVar(&o.tokenEnv, "token-env", "", "send the bearer token read from the environment variable `NAME`")
	fs.BoolVar(&o.noHistory, "no-history", false, "at a terminal, keep no history file of the lines typed")
	fs.BoolVar(&o.reasoning, "reasoning", false, "print a reply's reasoning, for a model that shows its thinking, as it streams, before the reply (and in /history)")
	addFormatFlag(cmd, "output", o.format)
	noLogDir(cmd, "the server writes the run logs of the turns (lllm serve --log-dir DIR)")
	return cmd
}

// maxChatLine is the longest line lllm chat reads.
const maxChatLine = 1 << 20

// chatClient talks to a lllm serve.
type chatClient struct {
	base   string
	token  string
	http   *http.Client
	agent  string
	sender string
	json   bool
	out    *bufio.Writer
	errw   io.Writer
	// prompt is whether to print "> " where an answer is awaited: only
	// when a person types the input.
	prompt bool
	// problems counts the errors reported during the session, which then
	// exits with ExitError.
	problems int
	// asked is the agent that asked the last question: its reply goes on
	// after the answer, under its name again.
	asked string
	// who is the answering agent of the reply being printed, as its
	// line names it.
	who string
	// reasoning is whether to print reasoning events (--reasoning), and
	// thinking whether the last thing printed was one.
	reasoning, thinking bool
	// term reads the input with line editing at a terminal; nil when the
	// input is piped.
	term *termReader
	// interactive is whether a person types the input (stdin is a
	// terminal): only then can /delete ask for a confirmation.
	interactive bool
}

// errInterrupted ends a chat that Ctrl-C interrupted at a prompt, as the
// signal does elsewhere.
var errInterrupted = &exitError{code: ExitError, errs: []error{errors.New("interrupted")}}

// runChat checks the server and agent, then sends each line read and
// prints the reply as it streams; a line that starts with / is a command.
func runChat(cmd *cobra.Command, o *chatOptions, agent string) error {
	c, err := newChatClient(cmd, o, agent)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel() // stops the stdin reader

	// Check the server and the agent before reading anything.
	infos, err := c.agents(ctx)
	if err != nil {
		return &exitError{code: ExitError, errs: []error{err}}
	}
	agents := make([]string, len(infos))
	for i, a := range infos {
		agents[i] = a.Name
	}
	i := slices.Index(agents, agent)
	if i < 0 {
		return usageErrorf(cmd, "unknown agent %q: the server at %s serves %s", agent, o.addr, strings.Join(agents, ", "))
	}
	guests := infos[i].Guests
	if slices.Contains(agents, o.sender) {
		return usageErrorf(cmd, "--sender %s is the name of an agent of the server at %s: take a name of your own", o.sender, o.addr)
	}
	if err := checkGuest(o.guest, agent, agents, guests); err != nil {
		return usageErrorf(cmd, "--guest %s: %v", o.guest, err)
	}
	if !c.json {
		fmt.Fprintf(c.errw, "Talking with %s as %s at %s. /help lists the commands.\n", agent, o.sender, o.addr)
	}

	lines := make(chan string)
	var readErr error // set before lines closes
	if useLineEditing(cmd.InOrStdin(), cmd.OutOrStdout()) {
		if done := c.editLines(cmd, guests, o.noHistory, cancel); done != nil {
			defer done()
		}
	}
	if c.term != nil {
		go c.term.run(ctx, lines, &readErr)
	} else {
		go readLines(ctx, cmd.InOrStdin(), lines, &readErr)
	}
	var queue []string // lines typed while a reply streamed
	next := func() (string, bool) {
		if len(queue) > 0 {
			l := queue[0]
			queue = queue[1:]
			return l, true
		}
		c.term.want(needNext)
		select {
		case l, ok := <-lines:
			c.term.got()
			return l, ok
		case <-ctx.Done():
			return "", false
		}
	}
	defer func() { _ = c.out.Flush() }()
	for {
		_ = c.out.Flush()
		line, ok := next()
		if !ok {
			if c.term.wasInterrupted() {
				return errInterrupted
			}
			if readErr != nil {
				c.problem(readErr)
			}
			return c.end()
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		guest := o.guest
		if strings.HasPrefix(line, "/") {
			g, message, end := c.command(ctx, line, next)
			if end {
				return c.end()
			}
			if message == "" {
				continue
			}
			guest, line = g, message
		}
		q, err := c.stream(ctx, line, guest, lines, queue)
		queue = q
		if err != nil {
			if c.term.wasInterrupted() {
				return errInterrupted
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			c.problem(err)
		}
	}
}

// newChatClient checks the flags of lllm chat and returns a client of
// the server they name, for agent, its input piped until editLines.
func newChatClient(cmd *cobra.Command, o *chatOptions, agent string) (*chatClient, error) {
	token, err := tokenFrom(cmd, o.tokenEnv)
	if err != nil {
		return nil, err
	}
	if err := conversation.CheckName("sender", o.sender); err != nil {
		return nil, usageErrorf(cmd, "--sender: %v", err)
	}
	base := o.addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	u, err := url.Parse(base)
	if err == nil && u.Port() != "" {
		err = checkPort(u.Port())
	}
	if err != nil {
		return nil, usageErrorf(cmd, "--addr %q: %v", o.addr, err)
	}
	// Replies and names are the server's text: escaped as a log's.
	return &chatClient{base: strings.TrimSuffix(base, "/"), token: token, http: &http.Client{}, agent: agent,
		sender: o.sender, json: o.format.value == "json", reasoning: o.reasoning,
		out: bufio.NewWriter(&termSafe{w: cmd.OutOrStdout()}), errw: cmd.ErrOrStderr(),
		prompt: isTerminal(cmd.InOrStdin()), interactive: isTerminal(cmd.InOrStdin())}, nil
}

// agents describes the agents the server serves.
func (c *chatClient) agents(ctx context.Context) ([]conversation.AgentInfo, error) {
	var agents struct {
		Agents []conversation.AgentInfo `json:"agents"`
	}
	if err := c.call(ctx, "GET", "/v1/agents", nil, &agents); err != nil {
		return nil, err
	}
	return agents.Agents, nil
}

// checkGuest reports why guest cannot answer in agent's conversations:
// it is not one of the server's agents, it is agent itself, or it is
// not among the guests agent admits. An empty guest is no guest.
func checkGuest(guest, agent string, agents, admitted []string) error {
	switch {
	case guest == "" || slices.Contains(admitted, guest):
		return nil
	case guest == agent:
		return fmt.Errorf("%s is the agent you talk with: leave --guest out to have it answer", agent)
	case !slices.Contains(agents, guest):
		hint := ""
		if s, ok := suggest.Closest(guest, agents); ok {
			hint = fmt.Sprintf(" (did you mean %q?)", s)
		}
		return fmt.Errorf("no such agent%s: the server serves %s", hint, strings.Join(agents, ", "))
	case len(admitted) == 0:
		return fmt.Errorf("%s admits no guests", agent)
	}
	return fmt.Errorf("%s admits only %s as guests", agent, strings.Join(admitted, ", "))
}

// editLines has the input read with line editing at the terminal, /guest
// completing the names guests; cancel ends the chat on Ctrl-C. It returns
// the function that gives the terminal back, or nil, having warned, when
// the terminal cannot edit lines.
func (c *chatClient) editLines(cmd *cobra.Command, guests []string, noHistory bool, cancel context.CancelFunc) (done func()) {
	t, err := newTermReader(termReaderOptions{in: cmd.InOrStdin().(*os.File), out: cmd.OutOrStdout().(*os.File),
		errw: c.errw, agent: c.agent, guests: guests, noHistory: noHistory, cancel: cancel})
	if err != nil {
		fmt.Fprintf(c.errw, "lllm: warning: no line editing: %s\n", oneLine(err.Error()))
		return nil
	}
	c.term, c.prompt = t, false // readline shows the prompt
	c.out = bufio.NewWriter(&termSafe{w: t.out})
	return t.close
}

// command runs the slash command line; next reads the next line. For
// /guest it returns the guest and the message to send it; else message
// is "". end is whether the chat ends: /quit, or a deleted conversation.
func (c *chatClient) command(ctx context.Context, line string, next func() (string, bool)) (guest, message string, end bool) {
	name, rest, _ := strings.Cut(line, " ")
	switch name {
	case "/quit", "/exit":
		return "", "", true // as at the end of the input
	case "/help":
		c.note(chatCommandsHelp(""))
	case "/search":
		c.search(ctx, rest)
	case "/read":
		if strings.TrimSpace(rest) != "" {
			c.problem(errors.New("usage: /read (it takes nothing after it)"))
			break
		}
		c.markRead(ctx)
	case "/delete":
		// A deleted conversation ends the chat, as at the end of the input.
		return "", "", c.deleteConversation(ctx, rest, next)
	case "/compact":
		var a conversation.Archive
		if err := c.call(ctx, "POST", "/v1/compact", c.body(""), &a); err != nil {
			c.problem(err)
		} else {
			c.result("compacted", a, fmt.Sprintf("[compacted into archive %d: %s]", a.ID, a.Title))
		}
	case "/archives":
		c.archives(ctx)
	case "/history":
		c.history(ctx)
	case "/kill":
		c.kill(ctx)
	case "/guest":
		who, text, _ := strings.Cut(strings.TrimSpace(rest), " ")
		if who == "" || strings.TrimSpace(text) == "" {
			c.problem(errors.New("usage: /guest NAME TEXT"))
			break
		}
		return who, strings.TrimSpace(text), false
	default:
		c.problem(fmt.Errorf("unknown command %s (/help lists them)", name))
	}
	return "", "", false
}

// end is how the chat ends when it is left: exit status 1 when anything
// failed during the session, else 0.
func (c *chatClient) end() error {
	if c.problems > 0 {
		return &exitError{code: ExitError}
	}
	return nil
}

// readLines sends the lines of in to lines until it ends or ctx is done,
// then closes lines. A read error is in *readErr by then.
func readLines(ctx context.Context, in io.Reader, lines chan<- string, readErr *error) {
	defer close(lines)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxChatLine)
	for sc.Scan() {
		select {
		case lines <- sc.Text():
		case <-ctx.Done():
			return
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		*readErr = fmt.Errorf("reading the input: a line is longer than %d MiB; nothing after it was sent", maxChatLine>>20)
	} else if err != nil {
		*readErr = fmt.Errorf("reading the input: %w", err)
	}
}

// body is the JSON of a request about this conversation.
func (c *chatClient) body(content string) map[string]string {
	b := map[string]string{"agent": c.agent, "sender": c.sender}
	if content != "" {
		b["content"] = content
	}
	return b
}

func (c *chatClient) request(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the server: %w (is lllm serve running at %s?)", err, c.base)
	}
	return resp, nil
}

// call sends a request and decodes a JSON answer into v, or returns the
// server's error.
func (c *chatClient) call(ctx context.Context, method, path string, body, v any) error {
	resp, err := c.request(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return decodeAnswer(resp, v)
}

func decodeAnswer(resp *http.Response, v any) error {
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e server.Error
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return &apiError{code: e.Code, msg: e.Error}
		}
		return &apiError{msg: resp.Status + ": " + strings.TrimSpace(string(data))}
	}
	if v == nil {
		return nil
	}
	return json.Unmarshal(data, v)
}

// apiError is an error response of the server.
type apiError struct {
	code string // the error's code, as docs/conversations.md lists them
	msg  string
}

func (e *apiError) Error() string { return "server: " + e.msg }

// errorCode is the server's code for err, or "".
func errorCode(err error) string {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.code
	}
	return ""
}

// note prints an informational line (text mode only).
func (c *chatClient) note(s string) {
	if !c.json {
		fmt.Fprintln(c.out, s)
	}
}

// result prints a command's result: JSON or text.
func (c *chatClient) result(kind string, v any, text string) {
	if c.json {
		_ = json.NewEncoder(c.out).Encode(map[string]any{"type": kind, kind: v})
		return
	}
	fmt.Fprintln(c.out, text)
}

func (c *chatClient) problem(err error) {
	_ = c.out.Flush()
	c.problems++
	fmt.Fprintf(c.errw, "lllm: %s\n", oneLine(err.Error()))
}

func (c *chatClient) kill(ctx context.Context) {
	if err := c.call(ctx, "POST", "/v1/kill", c.body(""), nil); err != nil {
		c.problem(err)
	}
}

func (c *chatClient) convPath(what string) string {
	return "/v1/conversations/" + url.PathEscape(c.agent) + "/" + url.PathEscape(c.sender) + "/" + what
}

func (c *chatClient) archives(ctx context.Context) {
	var out struct {
		Archives []server.ArchiveInfo `json:"archives"`
	}
	if err := c.call(ctx, "GET", c.convPath("archives"), nil, &out); err != nil {
		c.problem(err)
		return
	}
	if c.json {
		c.result("archives", out.Archives, "")
		return
	}
	if len(out.Archives) == 0 {
		fmt.Fprintln(c.out, "[no archives]")
	}
	for _, a := range out.Archives {
		missing := ""
		if a.Missing {
			missing = " [file missing]"
		}
		fmt.Fprintf(c.out, "[archive %d] %s (%s, %d messages)%s\n", a.ID, a.Title, a.Created.Local().Format(time.DateTime), a.Archived, missing)
	}
}

func (c *chatClient) history(ctx context.Context) {
	var out server.MessagesResponse
	if err := c.call(ctx, "GET", c.convPath("messages"), nil, &out); err != nil {
		c.problem(err)
		return
	}
	if c.json {
		c.result("messages", out.Messages, "")
		return
	}
	for i, e := range out.Messages {
		if e.Message == nil {
			continue
		}
		fmt.Fprintf(c.out, "%s: ", e.Message.Name)
		if r := e.Message.ReasoningText(); c.reasoning && r != "" {
			fmt.Fprintf(c.out, "[thinking] %s\n", r) // as the reply streamed
		}
		fmt.Fprintln(c.out, e.Message.Text())
		for _, a := range e.Asks {
			fmt.Fprintf(c.out, "  [%s asked] %s\n", a.Agent, a.Question)
			if a.Error != "" && a.Answer == "" {
				fmt.Fprintf(c.out, "  [no answer: %s]\n", truncateText(oneLine(a.Error), chatNoteMax))
			} else {
				fmt.Fprintf(c.out, "  [%s answered] %s\n", out.Sender, a.Answer)
			}
		}
		isTurn := e.Message.Role == dialog.RoleUser && e.Message.Name != "summary"
		switch {
		case e.Aborted != nil:
			fmt.Fprintf(c.out, "  [no reply: %s]\n", abortNote(out.Agent, e.Aborted))
		case isTurn && i+1 < len(out.Messages) && out.Messages[i+1].Message != nil && out.Messages[i+1].Message.Role != dialog.RoleAssistant:
			// Followed by another message without a reply: the run
			// died with the server, as the model is told too.
			fmt.Fprintln(c.out, "  [no reply: the run did not finish (the server stopped)]")
		}
	}
}

// chatNoteMax is how many characters of an error /history quotes.
const chatNoteMax = 200

// abortNote says, on one line, how the run that left ab ended without a
// reply.
func abortNote(agent string, ab *conversation.Abort) string {
	who := "the run"
	if ab.Agent != "" && ab.Agent != agent {
		who = "the run of the guest " + ab.Agent
	}
	switch ab.Status {
	case conversation.AbortKilled:
		return who + " was killed"
	case conversation.AbortCancelled:
		return who + " was cancelled (the client went away or the server stopped)"
	}
	note := who + " " + cmp.Or(ab.Status, "failed")
	if ab.Error != "" {
		note += ": " + truncateText(oneLine(ab.Error), chatNoteMax)
	}
	return note
}

// search runs /search [--all] [--limit N] TEXT.
func (c *chatClient) search(ctx context.Context, args string) {
	const usage = "usage: /search [--all] [--limit N] TEXT (--all: every conversation of the agent; --limit: up to N matches, 1 to 200)"
	all, limit := false, ""
	rest := strings.TrimSpace(args)
	for {
		word, after, _ := strings.Cut(rest, " ")
		if word == "--" {
			rest = strings.TrimSpace(after)
			break
		}
		if !strings.HasPrefix(word, "--") {
			break
		}
		switch word {
		case "--all":
			all = true
		case "--limit":
			n, after2, _ := strings.Cut(strings.TrimSpace(after), " ")
			if v, err := strconv.Atoi(n); err != nil || v < 1 || v > conversation.MaxSearchLimit {
				c.problem(fmt.Errorf("/search --limit %q: want a number from 1 to %d", n, conversation.MaxSearchLimit))
				return
			}
			limit, after = n, after2
		default:
			c.problem(fmt.Errorf("/search: unknown option %s (%s; /search -- TEXT looks for a TEXT that starts with --)", word, usage))
			return
		}
		rest = strings.TrimSpace(after)
	}
	if rest == "" {
		c.problem(errors.New(usage))
		return
	}
	q := url.Values{"q": {rest}, "agent": {c.agent}, "archives": {"true"}}
	if !all {
		q.Set("sender", c.sender)
	}
	if limit != "" {
		q.Set("limit", limit)
	}
	var res conversation.SearchResult
	if err := c.call(ctx, "GET", "/v1/search?"+q.Encode(), nil, &res); err != nil {
		if errorCode(err) == "empty_query" {
			err = errors.New(usage)
		}
		c.problem(fmt.Errorf("/search: %w", err))
		return
	}
	if c.json {
		c.result("search", res, "")
		return
	}
	if len(res.Matches) == 0 {
		where := "this conversation"
		if all {
			where = "the conversations of " + c.agent
		}
		fmt.Fprintf(c.out, "[no match for %q in %s]\n", rest, where)
		return
	}
	for _, m := range res.Matches {
		where := fmt.Sprintf("live #%d", m.Index)
		if m.Archive > 0 {
			where = fmt.Sprintf("archive %d #%d", m.Archive, m.Index)
		}
		if all {
			where = m.Sender + ": " + where
		}
		who := m.Name
		if who == "" {
			who = string(m.Role)
		}
		switch m.Field {
		case "question":
			who += ", a question asked"
		case "answer":
			who += ", an answer"
		}
		fmt.Fprintf(c.out, "[%s] %s: %s\n", where, who, m.Snippet)
	}
	if res.Truncated {
		fmt.Fprintf(c.out, "[more matches than these %d: narrow the search, or /search --limit N (up to %d)]\n", len(res.Matches), conversation.MaxSearchLimit)
	}
}

// markRead runs /read.
func (c *chatClient) markRead(ctx context.Context) {
	var out map[string]any
	if err := c.call(ctx, "POST", "/v1/mark-read", c.body(""), &out); err != nil {
		if errorCode(err) == "no_conversation" {
			err = fmt.Errorf("nothing is stored yet in the conversation of %s with %s: there is nothing to mark read", c.agent, c.sender)
		}
		c.problem(fmt.Errorf("/read: %w", err))
		return
	}
	c.result("read", out, "[every reply is read: the conversation's unread count is 0]")
}

// deleteConversation runs /delete [--yes]: after a confirmation typed at
// the terminal (or --yes) it deletes the conversation. next reads the
// next line. It reports whether the conversation was deleted.
func (c *chatClient) deleteConversation(ctx context.Context, args string, next func() (string, bool)) bool {
	yes := false
	switch a := strings.TrimSpace(args); a {
	case "":
	case "--yes":
		yes = true
	default:
		c.problem(fmt.Errorf("/delete: unexpected %q (usage: /delete, or /delete --yes to delete without a confirmation)", a))
		return false
	}
	if !yes {
		if !c.interactive {
			c.problem(errors.New("/delete: the input is not a terminal, so nothing can confirm: type /delete --yes to delete the conversation"))
			return false
		}
		var sum server.MessagesResponse
		if err := c.call(ctx, "GET", c.convPath("messages"), nil, &sum); err != nil {
			c.problem(fmt.Errorf("/delete: %w", err))
			return false
		}
		_ = c.out.Flush()
		fmt.Fprintf(c.errw, "Delete the conversation of %s with %s (%d live messages, %d archives)? It moves into the server's trash. Type %s or yes to delete it, anything else keeps it.\n",
			c.agent, c.sender, len(sum.Messages), sum.Archives, c.sender)
		if c.prompt {
			fmt.Fprint(c.out, "> ")
			_ = c.out.Flush()
		}
		answer, ok := next()
		if !ok {
			return false // the input ended: the chat ends, nothing deleted
		}
		if a := strings.TrimSpace(answer); a != c.sender && !strings.EqualFold(a, "yes") {
			c.say("[nothing was deleted]")
			return false
		}
	}
	var out struct {
		Deleted bool   `json:"deleted"`
		Agent   string `json:"agent"`
		Sender  string `json:"sender"`
		Trash   string `json:"trash"`
	}
	if err := c.call(ctx, "DELETE", "/v1/conversations/"+url.PathEscape(c.agent)+"/"+url.PathEscape(c.sender), nil, &out); err != nil {
		switch errorCode(err) {
		case "no_conversation":
			err = fmt.Errorf("nothing is stored in the conversation of %s with %s: there is nothing to delete", c.agent, c.sender)
		case "busy":
			err = errors.New("a reply (or a compaction) is in progress in this conversation, for another client: wait for its end or /kill it, then /delete again")
		}
		c.problem(fmt.Errorf("/delete: %w", err))
		return false
	}
	c.result("deleted", out, fmt.Sprintf("[deleted: the conversation of %s with %s is now %s in the server's data directory (move it back, with the server stopped, to restore it); the chat ends]",
		c.agent, c.sender, out.Trash))
	return true
}

// say prints a line for the person at the terminal: with the output in
// text, or on stderr with -o json.
func (c *chatClient) say(s string) {
	if c.json {
		_ = c.out.Flush()
		fmt.Fprintln(c.errw, s)
		return
	}
	fmt.Fprintln(c.out, s)
}

// stream sends one message and prints the reply as it streams. Lines typed
// meanwhile answer an ask_user question, kill the run (/kill) or wait in
// the returned queue.
func (c *chatClient) stream(ctx context.Context, content, guest string, lines <-chan string, queue []string) ([]string, error) {
	body := c.body(content)
	if guest != "" {
		body["guest"] = guest
	}
	resp, err := c.request(ctx, "POST", "/v1/stream", body)
	if err != nil {
		return queue, err
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return queue, decodeAnswer(resp, nil)
	}
	events := make(chan conversation.Event)
	readErr := make(chan error, 1)
	go func() {
		defer close(events)
		readErr <- readEvents(resp.Body, func(ev conversation.Event) bool {
			select {
			case events <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	asking := false
	started, ended := false, false // a reply began; its end event came
	// cutLine ends the line of a reply that stops before its end event.
	cutLine := func() {
		if started && !ended && !c.json {
			fmt.Fprintln(c.out)
		}
	}
	answer := func(l string) {
		asking = false
		if err := c.call(ctx, "POST", "/v1/reply", c.body(l), nil); err != nil {
			c.problem(err)
		}
	}
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				err := <-readErr
				if ended || errors.Is(err, errBadEvent) {
					return queue, err
				}
				cutLine()
				if ctx.Err() != nil {
					return queue, err
				}
				cut := errors.New("the server closed the stream before the reply ended")
				if err != nil {
					cut = fmt.Errorf("%w: %w", cut, err)
				}
				return queue, fmt.Errorf("%w (did lllm serve at %s stop? once it runs again, /history shows what the conversation kept)", cut, c.base)
			}
			c.show(ev)
			started = started || ev.Type == "start"
			ended = ended || ev.Type == "end"
			if ev.Type == "end" {
				// The run is over: a line typed before the stream
				// closes is the next message, not an answer.
				asking = false
			}
			if ev.Type == "ask" {
				asking = true
				if len(queue) > 0 {
					l := queue[0]
					queue = queue[1:]
					answer(l)
				} else {
					c.term.want(needAnswer)
				}
			}
		case l, ok := <-lines:
			c.term.got()
			if !ok {
				lines = nil // end of input: let the reply finish
				continue
			}
			switch t := strings.TrimSpace(l); {
			case t == "/kill":
				c.kill(ctx)
			case asking && t != "":
				answer(t)
			default:
				queue = append(queue, l)
			}
		case <-ctx.Done(): // Ctrl-C: "lllm: interrupted" goes on a line of its own
			cutLine()
			return queue, ctx.Err()
		}
	}
}

// show prints one event.
func (c *chatClient) show(ev conversation.Event) {
	if ev.Type == "end" && (ev.Status == "error" || ev.Status == "cancelled") {
		c.problems++ // a reply that failed: the session's exit status says so
	}
	if c.json {
		_ = json.NewEncoder(c.out).Encode(ev)
		_ = c.out.Flush()
		return
	}
	switch ev.Type {
	case "start":
		c.who = ev.Agent
		if ev.Guest {
			c.who += " (guest)"
		}
		fmt.Fprintf(c.out, "%s: ", c.who)
	case "reasoning":
		if !c.reasoning {
			break
		}
		if c.asked != "" {
			fmt.Fprintf(c.out, "%s: ", c.asked)
			c.asked = ""
		}
		if !c.thinking {
			fmt.Fprint(c.out, "[thinking] ")
			c.thinking = true
		}
		fmt.Fprint(c.out, ev.Text)
	case "text":
		if c.asked != "" {
			fmt.Fprintf(c.out, "%s: ", c.asked)
			c.asked = ""
		}
		c.endThinking()
		fmt.Fprint(c.out, ev.Text)
	case "tool":
		c.endThinking() // the next round's reasoning is marked again
		if ev.Tool != nil {
			fmt.Fprintf(c.out, "[tool %s %s] ", ev.Tool.Name, ev.Tool.Arguments)
		}
	case "ask":
		c.thinking = false // the question goes on a line of its own
		fmt.Fprintf(c.out, "\n[%s asks] %s\n", ev.Agent, ev.Text)
		if c.prompt {
			fmt.Fprint(c.out, "> ")
		}
		c.asked = ev.Agent
	case "retry":
		// What streamed of the failed attempt is dropped: the reply
		// starts again on a line of its own, under the agent's name,
		// which a reply after a question then does not repeat.
		if c.asked == "" {
			fmt.Fprintln(c.out)
		}
		c.thinking, c.asked = false, ""
		fmt.Fprintf(c.out, "[retrying: %s]\n%s: ", ev.Error, c.who)
	case "error":
		fmt.Fprintf(c.out, "\n[error: %s]", ev.Error)
	case "end":
		switch ev.Status {
		case "killed":
			fmt.Fprint(c.out, " [killed]")
		case "ok":
			if m := ev.Message; m != nil && m.Message != nil && m.Message.Text() == "" {
				c.endThinking()
				if m.Message.ReasoningText() != "" && !c.reasoning {
					fmt.Fprint(c.out, "[no text: the reply is all reasoning, which --reasoning shows]")
				} else {
					fmt.Fprint(c.out, "[no text]")
				}
			}
			if ev.Compacted != nil {
				fmt.Fprintf(c.out, "\n[compacted into archive %d: %s]", ev.Compacted.ID, ev.Compacted.Title)
			}
		}
		c.thinking = false
		fmt.Fprintln(c.out)
	}
	_ = c.out.Flush()
}

// endThinking ends the line of reasoning being printed, if any, so that
// what follows (the reply, a tool call) starts a line of its own.
func (c *chatClient) endThinking() {
	if c.thinking {
		fmt.Fprintln(c.out)
		c.thinking = false
	}
}

// errBadEvent is the error of an event the server sent that does not
// parse.
var errBadEvent = errors.New("bad event from the server")

// readEvents parses Server-Sent Events from r, calling f with each until
// it returns false.
func readEvents(r io.Reader, f func(conversation.Event) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if data.Len() == 0 {
				continue
			}
			var ev conversation.Event
			if err := json.Unmarshal(data.Bytes(), &ev); err != nil {
				return fmt.Errorf("%w: %w", errBadEvent, err)
			}
			data.Reset()
			if !f(ev) {
				return nil
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" ")))
		}
	}
	return sc.Err()
}
