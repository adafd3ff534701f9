package config

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzParse checks that Parse never panics and that every accepted config
// round-trips: Resolved, written as YAML and parsed again, resolves to the
// same YAML.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	more, _ := filepath.Glob("testdata/*/*.yaml")
	for _, name := range append(files, more...) {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("a: &a [1]\nparams: {<<: {x: *a}, y: !!binary aGk=}\n"))
	f.Add([]byte("params: {t: 2001-12-14, n: .nan, big: 123456789012345678901234567890, f: 1e3}\n"))
	noFiles := func(name string) ([]byte, error) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.yaml", data, noFiles)
		if err != nil {
			if c != nil {
				t.Fatal("Parse returned a config and an error")
			}
			return
		}
		_ = Validate(c, []string{"solver"})
		first, err := yaml.Marshal(c.Resolved())
		if err != nil {
			t.Fatalf("marshal resolved: %v", err)
		}
		c2, err := Parse("again.yaml", first, noFiles)
		if err != nil {
			t.Fatalf("resolved config does not parse again: %v\n%s", err, first)
		}
		second, err := yaml.Marshal(c2.Resolved())
		if err != nil {
			t.Fatalf("marshal resolved again: %v", err)
		}
		if !bytes.Equal(first, second) {
			t.Fatalf("round trip changed the config:\n%s\n---\n%s", first, second)
		}
		if len(c.Agents) != len(c2.Agents) || c.TacticType != c2.TacticType {
			t.Fatalf("round trip changed the agents or tactic")
		}
		for _, a := range c.Agents {
			if _, err := c.Agent(a.Name); err != nil {
				t.Fatalf("Agent(%q): %v", a.Name, err)
			}
		}
	})
}
