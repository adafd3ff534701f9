package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/runtime/conversation"
	"github.com/lllm-go/lllm/runtime/server"
)

// preloadTokens builds the encoding a model's tokens are counted with;
// lllm serve calls it for each agent's model when it starts.
var preloadTokens = contextmgr.Preload

// DefaultServeAddr is where lllm serve listens and lllm chat connects by
// default: loopback only.
const DefaultServeAddr = "127.0.0.1:7878"

// defaultDataDir is where conversations live when neither --data-dir nor
// the config's params.data_dir says.
const defaultDataDir = "conversations"

// serveRunsDir is where, inside the data dir, lllm serve writes the run
// logs of its turns when neither --log-dir nor the config's log_dir says.
const serveRunsDir = "runs"

type serveOptions struct {
	*options
	addr, config, dataDir, tokenEnv string
	// logDir is serve's own --log-dir: its default is not the root's.
	logDir         string
	noLog          bool
	trashRetention time.Duration
}

func newServeCmd(opts *options) *cobra.Command {
	o := &serveOptions{options: opts}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve persistent agent conversations over HTTP",
		Long: `Serve the agents of a serve config over HTTP: one persistent conversation
per (agent, sender), with streaming replies (Server-Sent Events), guest
agents, compaction into searchable archives, and ask_user questions.

Conversations are stored under the data dir (--data-dir, else the config's
params.data_dir, else ./conversations) and restored when the server starts
again. The API is described in docs/conversations.md; lllm chat is a
terminal client for it.

Every turn writes a run log, as lllm run does: its dialog, every model call
and tool call (recall, ask_user, the agents' own tools) and how it ended
(ok, failed, or cancelled when killed or disconnected); every compaction's
summary call writes one too. The logs go under the log root --log-dir, else
the config's log_dir, else the runs folder of the data dir; --no-log writes
none. Each run is labelled conversation=AGENT/SENDER, so lllm runs, tree,
show and view work on them as on any run (give them the same --log-dir).

A deleted conversation moves into the data dir's trash (DATA_DIR/.trash).
What was deleted longer ago than the trash retention (--trash-retention,
else the config's params.trash_retention, else 720h: 30 days) is removed
when the server starts and then hourly, each removal logged; 0 keeps the
trash for ever. Nothing outside the trash is removed, and no symbolic link
is followed.

The server listens on loopback only unless told otherwise; serving another
address needs a bearer token, read from the environment variable that
--token-env names. Ctrl-C stops the server cleanly: runs in flight are
cancelled (their partial replies are not stored) and every log is synced.`,
		Example: `  # The two mock agents of configs/serve.yaml, on 127.0.0.1:7878
  lllm serve --config configs/serve.yaml --data-dir /tmp/conversations

  # Then, in another terminal
  lllm chat assistant --sender alice

  # The run logs of the served turns, and the dialog tree of the latest
  lllm runs --log-dir /tmp/conversations/runs
  lllm tree latest --log-dir /tmp/conversations/runs

  # Run logs under another root, or none
  lllm serve --config configs/serve.yaml --log-dir /data/logs/served
  lllm serve --config configs/serve.yaml --no-log

  # Keep deleted conversations a week, or for ever
  lllm serve --config configs/serve.yaml --trash-retention 168h
  lllm serve --config configs/serve.yaml --trash-retention 0

  # On every interface, with a token clients send as "Authorization: Bearer ..."
  LLLM_TOKEN=$(openssl rand -hex 16) lllm serve --addr 0.0.0.0:7878 --token-env LLLM_TOKEN`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(cmd, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.addr, "addr", DefaultServeAddr, "the `HOST:PORT` to listen on")
	fs.StringVar(&o.config, "config", "configs/serve.yaml", "the serve config: the `FILE` defining the agents")
	fs.StringVar(&o.dataDir, "data-dir", "", "the `DIR` conversations are stored in (default: the config's params.data_dir, else ./conversations)")
	fs.StringVar(&o.tokenEnv, "token-env", "", "require a bearer token, read from the environment variable `NAME`")
	fs.DurationVar(&o.trashRetention, "trash-retention", 0, "remove deleted conversations from the trash once they are older than `DURATION`; 0 keeps them for ever (default: the config's params.trash_retention, else 720h)")
	fs.StringVar(&o.logDir, "log-dir", "", "the log root the run logs of the served turns go under: the `DIR` holding one directory per run (default: the config's log_dir, else DATA_DIR/runs)")
	fs.BoolVar(&o.noLog, "no-log", false, "write no run logs of the served turns")
	_ = cmd.MarkFlagFilename("config", "yaml", "yml")
	_ = cmd.MarkFlagDirname("data-dir")
	_ = cmd.MarkFlagDirname("log-dir")
	return cmd
}

// tokenFrom reads the bearer token from the environment variable name.
func tokenFrom(cmd *cobra.Command, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	tok := strings.TrimSpace(os.Getenv(name))
	if tok == "" {
		return "", usageErrorf(cmd, "--token-env %s: the environment variable %s is empty or unset", name, name)
	}
	return tok, nil
}

func runServe(cmd *cobra.Command, o *serveOptions) error {
	ctx := cmd.Context()
	if _, err := checkListenAddr(cmd, o.addr, DefaultServeAddr); err != nil {
		return err
	}
	token, err := tokenFrom(cmd, o.tokenEnv)
	if err != nil {
		return err
	}
	if token == "" && !server.IsLoopbackAddr(o.addr) {
		return usageErrorf(cmd, "--addr %s is not a loopback address: serving others needs a token (--token-env NAME)", o.addr)
	}
	if _, err := os.Stat(o.config); errors.Is(err, fs.ErrNotExist) && !cmd.Flag("config").Changed {
		return usageErrorf(cmd, "no serve config at %s, the default (run from the repository, or give one with --config FILE)", o.config)
	}
	cfg, err := server.LoadConfig(ctx, o.config)
	if err != nil {
		return &exitError{code: ExitUsage, errs: problems(err)}
	}
	dataDir := o.dataDir
	if dataDir == "" {
		dataDir = cfg.DataDir
	}
	if dataDir == "" {
		dataDir = defaultDataDir
	}
	logDir, err := serveLogDir(cmd, o, cfg, dataDir)
	if err != nil {
		return err
	}
	retention := cfg.TrashRetention
	if cmd.Flag("trash-retention").Changed {
		if o.trashRetention < 0 {
			return usageErrorf(cmd, "--trash-retention %s is negative: give how long to keep deleted conversations, such as 720h, or 0 to keep them for ever", o.trashRetention)
		}
		retention = o.trashRetention
	}
	// Listen first: a port in use must not leave a new data dir behind.
	ln, err := listen(ctx, o.addr)
	if err != nil {
		return err
	}
	defer ln.Close() // when serving never starts
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
	store, err := conversation.Open(dataDir, conversation.Options{Logger: logger, TrashRetention: retention})
	if err != nil {
		return err
	}
	defer store.Close()
	svc, err := conversation.NewService(store, cfg.Agents, conversation.ServiceOptions{AskTimeout: cfg.AskUserTimeout, Tokens: cfg.Tokens, LogDir: logDir})
	if err != nil {
		return &exitError{code: ExitUsage, errs: []error{fmt.Errorf("%s: %w", cfg.Path, err)}}
	}
	base, stopStreams := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopStreams(conversation.ErrStopping)
	hs := &http.Server{
		Handler:           server.New(svc, server.Options{Token: token, MaxContentBytes: cfg.MaxContentBytes}),
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: 10 * time.Second,
	}
	names := make([]string, 0, len(cfg.Agents))
	for _, a := range cfg.Agents {
		names = append(names, a.Name)
	}
	out := cmd.OutOrStdout()
	runLogs := "off (--no-log)"
	if logDir != "" {
		runLogs = logDir
	}
	fmt.Fprintf(out, "lllm serve: listening on http://%s (agents: %s; data dir: %s; run logs: %s)\n", ln.Addr(), strings.Join(names, ", "), dataDir, runLogs)
	// The first turn's token counts would build the tokenizer's encoding
	// (a second or two on a slow machine, paid by the first reply after
	// every start): build it now, while the server waits for clients.
	for _, a := range cfg.Agents {
		go preloadTokens(a.ModelName)
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err = <-served:
	case <-ctx.Done():
	}
	// Cancel the streams in flight, then wait for their handlers.
	stopStreams(conversation.ErrStopping)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	serr := hs.Shutdown(sctx)
	cerr := store.Close()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	if err := errors.Join(serr, cerr); err != nil {
		return fmt.Errorf("stopping: %w", err)
	}
	fmt.Fprintln(out, "lllm serve: stopped")
	return nil
}

// serveLogDir is the log root of the served turns' run logs: --log-dir,
// else the config's log_dir, else the runs folder of dataDir; "" with
// --no-log.
func serveLogDir(cmd *cobra.Command, o *serveOptions, cfg *server.Config, dataDir string) (string, error) {
	changed := cmd.Flag("log-dir").Changed
	switch {
	case o.noLog && changed:
		return "", usageErrorf(cmd, "--no-log and --log-dir %s contradict each other: give one of them", shellQuote(o.logDir))
	case o.noLog:
		return "", nil
	case changed && strings.TrimSpace(o.logDir) == "":
		return "", usageErrorf(cmd, "--log-dir is empty: give the DIR to write run logs under, or --no-log to write none")
	case changed:
		return o.logDir, nil
	case cfg.LogDir != "":
		return cfg.LogDir, nil
	}
	dir := filepath.Join(dataDir, serveRunsDir)
	for _, a := range cfg.Agents {
		if a.Name == serveRunsDir {
			// Its conversations would be stored in the folder of the run logs.
			return "", usageErrorf(cmd, "%s: the agent %q would share %s with the run logs: give them another root with --log-dir DIR (or log_dir in the config), or pass --no-log",
				cfg.Path, serveRunsDir, dir)
		}
	}
	return dir, nil
}
