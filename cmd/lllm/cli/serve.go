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
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lllm-go/lllm/runtime/conversation"
	"github.com/lllm-go/lllm/runtime/server"
)

// DefaultServeAddr is where lllm serve listens and lllm chat connects by
// default: loopback only.
const DefaultServeAddr = "127.0.0.1:7878"

// defaultDataDir is where conversations live when neither --data-dir nor
// the config's params.data_dir says.
const defaultDataDir = "conversations"

type serveOptions struct {
	*options
	addr, config, dataDir, tokenEnv string
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

The server listens on loopback only unless told otherwise; serving another
address needs a bearer token, read from the environment variable that
--token-env names. Ctrl-C stops the server cleanly: runs in flight are
cancelled (their partial replies are not stored) and every log is synced.`,
		Example: `  # The two mock agents of configs/serve.yaml, on 127.0.0.1:7878
  lllm serve --config configs/serve.yaml --data-dir /tmp/conversations

  # Then, in another terminal
  lllm chat assistant --sender alice

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
	_ = cmd.MarkFlagFilename("config", "yaml", "yml")
	_ = cmd.MarkFlagDirname("data-dir")
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
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
	store, err := conversation.Open(dataDir, conversation.Options{Logger: logger})
	if err != nil {
		return err
	}
	defer store.Close()
	svc, err := conversation.NewService(store, cfg.Agents, conversation.ServiceOptions{AskTimeout: cfg.AskUserTimeout, Tokens: cfg.Tokens})
	if err != nil {
		return &exitError{code: ExitUsage, errs: []error{fmt.Errorf("%s: %w", cfg.Path, err)}}
	}
	ln, err := listen(ctx, o.addr)
	if err != nil {
		return err
	}
	base, stopStreams := context.WithCancel(context.WithoutCancel(ctx))
	defer stopStreams()
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
	fmt.Fprintf(out, "lllm serve: listening on http://%s (agents: %s; data dir: %s)\n", ln.Addr(), strings.Join(names, ", "), dataDir)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err = <-served:
	case <-ctx.Done():
	}
	// Cancel the streams in flight, then wait for their handlers.
	stopStreams()
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
