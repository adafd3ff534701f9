package prompts

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/lllm-go/lllm/dialog"
)

func init() {
	RegisterPackage("lab", fstest.MapFS{
		"research/agent.md": {Data: []byte("---\nxml_tags: [answer]\n---\nYou research {topic}.\n")},
		"plain.txt":         {Data: []byte("Be brief.")},
		".hidden/x.md":      {Data: []byte("{nope")},
	})
	RegisterPackage("broken", fstest.MapFS{
		"bad.md": {Data: []byte("---\nxml_tagz: [a]\n---\nHi.\n")},
	})
}

func TestPromptPackages(t *testing.T) {
	p, err := Lookup("lab:research/agent", nil)
	if err != nil || p.Path != "research/agent" || p.Parser == nil {
		t.Fatalf("lab:research/agent: %+v, %v", p, err)
	}
	if text, err := p.Render(map[string]any{"topic": "moths"}); err != nil || text != "You research moths." {
		t.Fatalf("render: %q, %v", text, err)
	}
	local := &Registry{}
	if err := local.Add(mustPrompt(t, "plain")); err != nil {
		t.Fatal(err)
	}
	if p, err := Lookup("plain", local); err != nil || p.Path != "plain" {
		t.Fatalf("a bare path finds the local prompt: %v", err)
	}
	for ref, want := range map[string]string{
		"lab:research/agnet": `prompt package lab: unknown prompt "research/agnet" (did you mean "research/agent"?)`,
		"lbs:plain":          `unknown prompt package "lbs" (did you mean "lab"?)`,
		"broken:bad":         `prompt package broken: bad.md:2:1: unknown front-matter key "xml_tagz" (did you mean "xml_tags"?)`,
		"research/agent":     "no prompts folder is loaded",
	} {
		_, err := Lookup(ref, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Lookup(%q) = %v, want %q", ref, err, want)
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("registering a package twice did not panic")
			}
		}()
		RegisterPackage("lab", fstest.MapFS{})
	}()
}

func mustPrompt(t *testing.T, path string) *dialog.Prompt {
	t.Helper()
	p, err := dialog.NewPrompt(path, "Be brief.")
	if err != nil {
		t.Fatal(err)
	}
	return p
}
