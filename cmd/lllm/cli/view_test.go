package cli

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

var viewURLPattern = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/`)

func TestViewServesAndStops(t *testing.T) {
	f := newFixture(t, t.TempDir())
	view, url := startLive(t, viewURLPattern, "view", "--log-dir", f.root, "--addr", "127.0.0.1:0", "--open=false")
	if !strings.Contains(view.out.String(), "the runs under "+f.root) {
		t.Errorf("view's first line: %q", view.out.String())
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

	if code := view.stop(t); code != ExitOK {
		t.Fatalf("view exited with %d after Ctrl-C:\n%s\n%s", code, view.out.String(), view.err.String())
	}
	if !strings.Contains(view.out.String(), "lllm view: stopped") || view.err.String() != "" {
		t.Errorf("after stopping:\nstdout %q\nstderr %q", view.out.String(), view.err.String())
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
