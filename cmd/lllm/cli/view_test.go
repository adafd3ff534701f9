package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe to write from a command while the
// test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var viewURLPattern = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/`)

func TestViewServesAndStops(t *testing.T) {
	f := newFixture(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Execute(ctx, []string{"view", "--log-dir", f.root, "--addr", "127.0.0.1:0", "--open=false"}, &stdout, &stderr)
	}()

	var url string
	for deadline := time.Now().Add(10 * time.Second); url == ""; {
		if url = viewURLPattern.FindString(stdout.String()); url != "" {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("view exited with %d before serving:\n%s\n%s", code, stdout.String(), stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("view printed no URL:\n%s\n%s", stdout.String(), stderr.String())
		}
	}
	if !strings.Contains(stdout.String(), "the runs under "+f.root) {
		t.Errorf("view's first line: %q", stdout.String())
	}

	resp, err := http.Get(url + "api/runs")
	if err != nil {
		t.Fatal(err)
	}
	var runs struct {
		Runs []struct {
			RunID  string `json:"run_id"`
			Status string `json:"status"`
		} `json:"runs"`
	}
	err = json.NewDecoder(resp.Body).Decode(&runs)
	resp.Body.Close()
	if err != nil || len(runs.Runs) != 1 || runs.Runs[0].RunID != f.runID || runs.Runs[0].Status != "ok" {
		t.Fatalf("GET api/runs: %v %+v", err, runs)
	}
	resp, err = http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "<title>lllm view</title>") {
		t.Fatalf("GET /: %d %s", resp.StatusCode, page)
	}

	cancel() // as Ctrl-C does
	select {
	case code := <-done:
		if code != ExitOK {
			t.Fatalf("view exited with %d after Ctrl-C:\n%s\n%s", code, stdout.String(), stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("view did not stop after its context was cancelled")
	}
	if !strings.Contains(stdout.String(), "lllm view: stopped") || stderr.String() != "" {
		t.Errorf("after stopping:\nstdout %q\nstderr %q", stdout.String(), stderr.String())
	}
	if _, err := http.Get(url + "api/runs"); err == nil {
		t.Error("the viewer still answers after it stopped")
	}
}

func TestViewPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	r := lllm(t, "view", "--log-dir", t.TempDir(), "--addr", addr, "--open=false")
	wantError(t, r, ExitError, "address "+addr+" is in use: pass --addr 127.0.0.1:0 or another port")
}

func TestViewUsage(t *testing.T) {
	wantError(t, lllm(t, "view", "--addr", "7777", "--open=false"), ExitUsage, `--addr "7777" is not HOST:PORT`)
	wantError(t, lllm(t, "view", "runs"), ExitUsage, "view takes no arguments")
	r := lllm(t, "view", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "Examples:") || !strings.Contains(r.stdout, "--addr HOST:PORT") || !strings.Contains(r.stdout, "--open") {
		t.Errorf("view --help:\n%v", r)
	}
}
