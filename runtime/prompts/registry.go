// Package prompts holds registries of prompts and loads them from a folder
// of Markdown or text files, so prompts live beside configs with no Go code.
//
// LoadDir registers every *.md and *.txt file under a directory by its
// path relative to it, without the extension and slash-separated: the file
// research/agent.md is the prompt "research/agent". A file may start with
// YAML front matter between two "---" lines:
//
//	---
//	description: Solves the task step by step.
//	xml_tags: [answer]          # TagParser: required <answer>...</answer>
//	md_tags: [python]           # TagParser: required ```python blocks
//	signal_tags: [DONE]         # TagParser: reports whether <DONE> occurs
//	optional_tags: [python]     # TagParser: tags that may be missing
//	tools: [calculator]         # tools the model may call, by name
//	format: json                # reply is a JSON object (JSONParser), or
//	# format: {type: object, properties: {answer: {type: string}}}
//	---
//	You are a careful solver. ...
//
// The rest of the file is the prompt's template (see [dialog.NewPrompt]),
// with leading blank lines and trailing white space removed. Unknown
// front-matter keys, bad values and template syntax errors are reported
// with the file and line; LoadDir reports the problems of every file at once.
//
// A Go package can ship prompt files too: it embeds them and registers the
// folder under a package name with RegisterPackage, and configs name its
// prompts "name:path" (Lookup).
package prompts

import (
	"errors"
	"fmt"
	"github.com/lllm-go/lllm/internal/suggest"
	"slices"
	"strings"
	"sync"

	"github.com/lllm-go/lllm/dialog"
)

// Registry maps prompt paths to prompts. The zero value is an empty
// registry ready to use; a Registry is safe for concurrent use and must not
// be copied after first use.
type Registry struct {
	mu  sync.RWMutex
	m   map[string]*dialog.Prompt
	src map[string]string // prompt path -> text of the file that defined it
}

// Add registers p under p.Path. An empty path or a path already registered
// is an error.
func (r *Registry) Add(p *dialog.Prompt) error {
	if p == nil {
		return errors.New("prompts: Add of a nil prompt")
	}
	if p.Path == "" {
		return errors.New("prompts: Add of a prompt without a path")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[p.Path]; dup {
		return fmt.Errorf("prompts: duplicate prompt %q", p.Path)
	}
	if r.m == nil {
		r.m = map[string]*dialog.Prompt{}
	}
	r.m[p.Path] = p
	return nil
}

// Get returns the prompt registered under path. An unknown path is a
// [*NotFoundError] with a suggestion and the nearest registered paths.
func (r *Registry) Get(path string) (*dialog.Prompt, error) {
	r.mu.RLock()
	p := r.m[path]
	r.mu.RUnlock()
	if p != nil {
		return p, nil
	}
	e := &NotFoundError{Path: path}
	e.Suggestion, e.Near = nearest(path, r.Paths(), 10)
	return nil, e
}

// Source returns the text of the file that defined the prompt at path,
// as LoadDir or LoadFS read it; ok is false for a prompt added with Add.
func (r *Registry) Source(path string) (text string, ok bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	text, ok = r.src[path]
	return text, ok
}

// AddFile parses data, the contents of a prompt file named file (for
// error messages), as LoadDir does, and registers the prompt under path,
// with data as its Source.
func (r *Registry) AddFile(file, path string, data []byte, opts ...Option) error {
	p, err := Parse(file, path, data, opts...)
	if err != nil {
		return err
	}
	return r.addFile(p, string(data))
}

// addFile registers p, read from a file holding text.
func (r *Registry) addFile(p *dialog.Prompt, text string) error {
	if err := r.Add(p); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.src == nil {
		r.src = map[string]string{}
	}
	r.src[p.Path] = text
	return nil
}

// Paths lists the registered paths, sorted.
func (r *Registry) Paths() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.m))
	for k := range r.m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Len is the number of registered prompts.
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.m)
}

// NotFoundError reports a prompt path that is not registered.
type NotFoundError struct {
	Path string
	// Suggestion is the registered path that is a likely typo of Path, or "".
	Suggestion string
	// Near are up to 10 registered paths nearest to Path, nearest first.
	Near []string
}

// Error names the path, the suggestion and the nearest registered paths.
func (e *NotFoundError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "unknown prompt %q", e.Path)
	if e.Suggestion != "" {
		fmt.Fprintf(&b, " (did you mean %q?)", e.Suggestion)
	}
	if len(e.Near) == 0 {
		b.WriteString("; no prompts are registered")
	} else {
		b.WriteString("; registered prompts include: " + strings.Join(e.Near, ", "))
	}
	return b.String()
}

// nearest returns the candidate that is a likely typo of s ("" if none)
// and up to n candidates ordered by edit distance to s, then by name.
func nearest(s string, candidates []string, n int) (string, []string) {
	type scored struct {
		name string
		d    int
	}
	all := make([]scored, len(candidates))
	for i, c := range candidates {
		all[i] = scored{c, suggest.Distance(s, c)}
	}
	slices.SortStableFunc(all, func(a, b scored) int {
		if a.d != b.d {
			return a.d - b.d
		}
		return strings.Compare(a.name, b.name)
	})
	var best string
	if len(all) > 0 {
		rs, rb := len([]rune(s)), len([]rune(all[0].name))
		if d := all[0].d; d <= max(2, rs/3) && d < rb {
			best = all[0].name
		}
	}
	near := make([]string, 0, min(n, len(all)))
	for i := 0; i < len(all) && i < n; i++ {
		near = append(near, all[i].name)
	}
	return best, near
}
