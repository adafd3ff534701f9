package prompts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lllm-go/lllm/dialog"
)

var addTool = func() *dialog.Function {
	f, err := dialog.NewFunction("add", "adds", func(_ context.Context, in struct {
		A int `json:"a"`
		B int `json:"b"`
	}) (int, error) {
		return in.A + in.B, nil
	})
	if err != nil {
		panic(err)
	}
	return f
}()

func lookup(name string) (*dialog.Function, error) {
	if name == "add" {
		return addTool, nil
	}
	return nil, fmt.Errorf("unknown tool %q (available: add)", name)
}

func TestLoadDir(t *testing.T) {
	r, err := LoadDir("testdata/good", WithTools(lookup))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"plain", "research/agent", "research/deep/json", "research/deep/schema"}
	if got := r.Paths(); !slices.Equal(got, want) {
		t.Fatalf("Paths = %q, want %q", got, want)
	}

	plain, err := r.Get("plain")
	if err != nil {
		t.Fatal(err)
	}
	if plain.Template != "You are a plain assistant for {task}." || plain.Parser != nil || plain.Format != nil ||
		plain.Metadata["source"] != filepath.Join("testdata/good", "plain.txt") {
		t.Fatalf("plain = %+v", plain)
	}

	agent, err := r.Get("research/agent")
	if err != nil {
		t.Fatal(err)
	}
	if agent.Path != "research/agent" || agent.Metadata["description"] != "A research agent." {
		t.Fatalf("agent = %+v", agent)
	}
	text, err := agent.Render(map[string]any{"topic": "primes"})
	if err != nil || text != "You research primes. Use {braces} literally." {
		t.Fatalf("Render = %q, %v", text, err)
	}
	tp, ok := agent.Parser.(*dialog.TagParser)
	if !ok {
		t.Fatalf("parser %T", agent.Parser)
	}
	if !slices.Equal(tp.XMLTags, []string{"answer", "reasoning"}) || !slices.Equal(tp.MDTags, []string{"python"}) ||
		!slices.Equal(tp.SignalTags, []string{"DONE"}) || !slices.Equal(tp.Optional, []string{"reasoning", "python"}) {
		t.Fatalf("tag parser %+v", tp)
	}
	if len(agent.Functions) != 1 || agent.Functions[0] != addTool {
		t.Fatalf("functions %v", agent.Functions)
	}
	if _, err := tp.Parse("<answer>7</answer> <DONE>"); err != nil {
		t.Fatalf("Parse: %v", err)
	}

	js, _ := r.Get("research/deep/json")
	if _, ok := js.Parser.(dialog.JSONParser); !ok || js.Format != nil {
		t.Fatalf("json prompt parser %T format %s", js.Parser, js.Format)
	}
	schema, _ := r.Get("research/deep/schema")
	var got, wantSchema any
	_ = json.Unmarshal(schema.Format, &got)
	_ = json.Unmarshal([]byte(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`), &wantSchema)
	if fmt.Sprint(got) != fmt.Sprint(wantSchema) || schema.Parser != nil {
		t.Fatalf("schema format %s, parser %T", schema.Format, schema.Parser)
	}
}

func TestLoadDirErrors(t *testing.T) {
	_, err := LoadDir("testdata/bad", WithTools(lookup))
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{
		filepath.Join("testdata/bad", "unknown_key.md") + `:3:1: unknown front-matter key "xml_tag" (did you mean "xml_tags"?)`,
		filepath.Join("testdata/bad", "sub", "template.md") + `:6:16: template syntax error: unmatched "{"`,
		filepath.Join("testdata/bad", "tools.md") + `:2:14: tools: unknown tool "nosuch"`,
		filepath.Join("testdata/bad", "unclosed.md") + `:1: front matter is not closed`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "ok.md") {
		t.Errorf("error mentions a good file:\n%s", msg)
	}
	var fe *FileError
	if !errors.As(err, &fe) {
		t.Errorf("no *FileError in %v", err)
	}

	// Without a tool lookup, naming tools is an error.
	_, err = LoadDir("testdata/good")
	if err == nil || !strings.Contains(err.Error(), "agent.md:7:1: tools: no tool lookup") {
		t.Errorf("without lookup: %v", err)
	}
}

func TestLoadDirDuplicate(t *testing.T) {
	_, err := LoadDir("testdata/dup")
	if err == nil || !strings.Contains(err.Error(), `a.txt: prompt "a" is already defined by `+filepath.Join("testdata/dup", "a.md")) {
		t.Fatalf("error %v", err)
	}
	if _, err := LoadDir("testdata/nosuch"); err == nil {
		t.Fatal("missing dir: no error")
	}
}

func TestFrontMatterErrors(t *testing.T) {
	cases := map[string]string{
		"---\nformat: xml\n---\nx":                     `f.md:2:9: format must be "json"`,
		"---\nformat: json\nxml_tags: [a]\n---\nx":     "f.md:2:9: format cannot be combined",
		"---\noptional_tags: [a]\n---\nx":              "optional_tags needs xml_tags or md_tags",
		"---\nxml_tags: answer\n---\nx":                "f.md:2:11: xml_tags must be a list",
		"---\ndescription: [a]\n---\nx":                "f.md:2:14: description must be a string",
		"---\nxml_tags: [a]\nxml_tags: [b]\n---\nx":    `f.md:3:1: duplicate key "xml_tags" (first at line 2)`,
		"---\n- a\n---\nx":                             "front matter must be a YAML mapping",
		"---\nxml_tags: [a\n---\nx":                    "f.md:",
		"---\n---\n\n\nbad }":                          "f.md:5:5: template syntax error",
		"no front matter\n}":                           "f.md:2:1: template syntax error",
		"---\ntools: [add, add]\n---\nx":               `f.md:2:14: tools: "add" is listed twice`,
		"---\nformat: {1: a}\n---\nx":                  "keys must be strings",
		"---\nsignal_tags: [\"\"]\nxml_tags: [a]\n---": "tag names must not be empty",
	}
	for src, want := range cases {
		_, err := Parse("f.md", "f", []byte(src), WithTools(lookup))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to contain %q", src, err, want)
		}
	}
	// An empty front matter and CRLF line endings are fine.
	p, err := Parse("f.md", "f", []byte("---\r\n---\r\nHello\r\n"))
	if err != nil || p.Template != "Hello" {
		t.Errorf("Parse = %+v, %v", p, err)
	}
}

func TestRegistry(t *testing.T) {
	var r Registry // the zero value is usable
	if _, err := r.Get("x"); err == nil || !strings.Contains(err.Error(), "no prompts are registered") {
		t.Fatalf("empty Get: %v", err)
	}
	for _, p := range []string{"research/agent", "research/judge", "chat/system", "a", "b", "c", "d", "e", "f", "g", "h", "i"} {
		if err := r.Add(dialog.MustPrompt(p, "text")); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Add(dialog.MustPrompt("a", "other")); err == nil || !strings.Contains(err.Error(), `duplicate prompt "a"`) {
		t.Fatalf("duplicate Add: %v", err)
	}
	if err := r.Add(nil); err == nil {
		t.Fatal("nil Add: no error")
	}
	_, err := r.Get("reserch/agent")
	var nf *NotFoundError
	if !errors.As(err, &nf) || nf.Suggestion != "research/agent" || len(nf.Near) != 10 || nf.Near[0] != "research/agent" ||
		nf.Near[1] != "research/judge" {
		t.Fatalf("Get: %v (%+v)", err, nf)
	}
	if !strings.Contains(err.Error(), `unknown prompt "reserch/agent" (did you mean "research/agent"?); registered prompts include: research/agent, research/judge, `) {
		t.Fatalf("message %q", err)
	}
	_, err = r.Get("zzzzzzzzzzzzzzz")
	if errors.As(err, &nf); nf.Suggestion != "" {
		t.Fatalf("far Get suggested %q", nf.Suggestion)
	}

	// Concurrent use.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = r.Add(dialog.MustPrompt(fmt.Sprintf("p%d", i), "x"))
			_, _ = r.Get("a")
			_ = r.Paths()
		}()
	}
	wg.Wait()
	if r.Len() != 20 {
		t.Fatalf("Len = %d", r.Len())
	}
}
