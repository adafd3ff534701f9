package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lllm-go/lllm/viewer"
)

type viewOptions struct {
	*options
	addr string
	open bool
}

// defaultViewAddr is where lllm view listens unless --addr says otherwise.
const defaultViewAddr = "127.0.0.1:7777"

func newViewCmd(opts *options) *cobra.Command {
	o := &viewOptions{options: opts}
	cmd := &cobra.Command{
		Use:   "view",
		Short: "Browse runs, dialog trees and transcripts in a local web viewer",
		Long: `Serve a web viewer of the runs under the log root (--log-dir) and print
its URL. It serves until Ctrl-C.

The viewer lists the runs (sortable, filterable by tactic and status), shows
a run's dialog forest as a collapsible tree with failed attempts marked, and
the transcript of any dialog: roles, agents, tool calls and results, images,
parsed output, usage and cost. A run that is still being written is followed
live. Large runs open fast: the server indexes each log once and sends the
browser pages of it, never a whole log.

The viewer is read-only and works offline: its page is built into the
binary. It listens on 127.0.0.1 (this machine only) unless --addr names
another interface; port 0 picks a free port.

--open (the default when a display is available) opens the URL in the
default browser; --open=false only prints it.`,
		Example: `  # The runs under ./logs, at http://127.0.0.1:7777/
  lllm view

  # Another log root, on a free port, without opening a browser
  lllm view --log-dir /data/experiments/logs --addr 127.0.0.1:0 --open=false`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runView(cmd, o)
		},
	}
	cmd.Flags().StringVar(&o.addr, "addr", defaultViewAddr, "the `HOST:PORT` to listen on (port 0 picks a free one)")
	cmd.Flags().BoolVar(&o.open, "open", true, "open the viewer in the default browser, when there is a display")
	return cmd
}

func runView(cmd *cobra.Command, o *viewOptions) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	host, err := checkListenAddr(cmd, o.addr, defaultViewAddr)
	if err != nil {
		return err
	}
	loopback := host == "localhost"
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		loopback = true
	}
	if st, err := os.Stat(o.logDir); err == nil && !st.IsDir() {
		return fmt.Errorf("--log-dir %s: not a directory", o.logDir)
	} else if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "lllm: no log root at %s yet: the viewer will list runs once they appear there\n", o.logDir)
	}

	ln, err := listen(ctx, o.addr)
	if err != nil {
		return err
	}
	if !loopback {
		fmt.Fprintf(cmd.ErrOrStderr(), "lllm: warning: serving on %s, not only this machine: anyone who can reach it can read your runs\n", ln.Addr())
	}

	h := viewer.New(o.logDir, viewer.Options{AllowAnyHost: !loopback})
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	url := viewURL(ln.Addr(), host)
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "lllm view: the runs under %s at %s (Ctrl-C to stop)\n", o.logDir, url)

	if o.open && haveDisplay() {
		if err := openBrowser(url); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "lllm: could not open a browser (%v): open %s yourself\n", err, url)
		}
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serving the viewer: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving the viewer: %w", err)
	}
	fmt.Fprintln(out, "lllm view: stopped")
	return nil
}

func hostOr(host, def string) string {
	if host == "" {
		return def
	}
	return host
}

// viewURL is the URL to print for a listener: its actual port, and the
// host the user asked for (127.0.0.1 for an unspecified one).
func viewURL(addr net.Addr, host string) string {
	_, port, _ := net.SplitHostPort(addr.String())
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// haveDisplay reports whether a browser could be shown.
func haveDisplay() bool {
	switch runtime.GOOS {
	case "darwin", "windows":
		return true
	}
	return os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != ""
}

// openBrowser asks the desktop to open url, without waiting for it.
func openBrowser(url string) error {
	var c *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		c = exec.Command("open", url)
	case "windows":
		c = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		c = exec.Command("xdg-open", url)
	}
	if err := c.Start(); err != nil {
		return err
	}
	go func() { _ = c.Wait() }()
	return nil
}

// checkListenAddr checks the --addr of lllm view and lllm serve, HOST:PORT
// with a valid port, and returns its host; a malformed one is a usage
// error, with example as the right form.
func checkListenAddr(cmd *cobra.Command, addr, example string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", usageErrorf(cmd, "--addr %q is not HOST:PORT, e.g. %s", addr, example)
	}
	if err := checkPort(port); err != nil {
		return "", usageErrorf(cmd, "--addr %q: %v", addr, err)
	}
	return host, nil
}

// checkPort checks the port of an address: a number from 0 to 65535 or a
// service name.
func checkPort(port string) error {
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("bad port %q: want a number from 0 to 65535", port)
	}
	return nil
}

// listen listens on addr for lllm view and lllm serve, saying what to do
// when the port is taken.
func listen(ctx context.Context, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	switch {
	case err == nil:
		return ln, nil
	case errors.Is(err, syscall.EADDRINUSE):
		host, _, _ := net.SplitHostPort(addr)
		return nil, &exitError{code: ExitError, errs: []error{
			fmt.Errorf("address %s is in use: pass --addr %s:0 or another port", addr, hostOr(host, "127.0.0.1"))}}
	}
	return nil, &exitError{code: ExitError, errs: []error{fmt.Errorf("cannot listen on %s: %w", addr, err)}}
}
