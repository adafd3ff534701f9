// Package registry is the one kind of registry behind lllm-go's named
// parts: tactics, tools, context managers and providers.
//
// A name is a path ("best_of_n", "research/probe"), optionally qualified
// by a package: "mylab:research/probe". Packages keep the parts of
// different projects apart. A lookup by a qualified name must match
// exactly; a lookup by a bare path finds the name registered without a
// package, or else the one package that has that path, and asks the caller
// to qualify it when several do. An unknown name is a *NotFoundError with
// a did-you-mean.
package registry

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/lllm-go/lllm/internal/suggest"
)

// Registry maps names to values of one kind. The zero value is not
// usable; make one with New. It is safe for concurrent use.
type Registry[T any] struct {
	kind, plural string
	sentinel     error

	mu       sync.RWMutex
	m        map[string]T
	unlisted map[string]bool // names NotFoundErrors neither list nor suggest
}

// New returns an empty registry of things called kind (plural: plural).
// Its NotFoundErrors match sentinel with errors.Is when sentinel is not
// nil.
func New[T any](kind, plural string, sentinel error) *Registry[T] {
	return &Registry[T]{kind: kind, plural: plural, sentinel: sentinel, m: map[string]T{}}
}

// Split splits a name into its package (empty when unqualified) and path.
func Split(name string) (pkg, path string) {
	if pkg, path, ok := strings.Cut(name, ":"); ok {
		return pkg, path
	}
	return "", name
}

// Valid reports whether name is a well-formed "path" or "pkg:path".
func Valid(name string) error {
	pkg, path := Split(name)
	if strings.Contains(name, ":") && pkg == "" {
		return fmt.Errorf("name %q has an empty package before ':'", name)
	}
	if path == "" {
		return fmt.Errorf("name %q has an empty path", name)
	}
	for _, r := range name {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("name %q contains a space or control character", name)
		}
	}
	if strings.Count(name, ":") > 1 {
		return fmt.Errorf("name %q has more than one ':' (want path or pkg:path)", name)
	}
	return nil
}

// Register adds v under name. An empty, malformed or taken name is an
// error.
func (r *Registry[T]) Register(name string, v T) error {
	if err := Valid(name); err != nil {
		return fmt.Errorf("registering a %s: %w", r.kind, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[name]; dup {
		return fmt.Errorf("%s %q is registered twice", r.kind, name)
	}
	r.m[name] = v
	return nil
}

// RegisterUnlisted is Register for a name that Lookup finds but that a
// NotFoundError neither lists nor suggests: a part only some callers may
// use, such as a tactic that only a replay runs.
func (r *Registry[T]) RegisterUnlisted(name string, v T) error {
	if err := r.Register(name, v); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unlisted == nil {
		r.unlisted = map[string]bool{}
	}
	r.unlisted[name] = true
	return nil
}

// MustRegister is Register for init code: it panics on an error, which is
// a programming mistake, as database/sql.Register does.
func (r *Registry[T]) MustRegister(name string, v T) {
	if err := r.Register(name, v); err != nil {
		panic(err)
	}
}

// Set adds or replaces v under name.
func (r *Registry[T]) Set(name string, v T) error {
	if err := Valid(name); err != nil {
		return fmt.Errorf("registering a %s: %w", r.kind, err)
	}
	r.mu.Lock()
	r.m[name] = v
	r.mu.Unlock()
	return nil
}

// Delete removes name.
func (r *Registry[T]) Delete(name string) {
	r.mu.Lock()
	delete(r.m, name)
	delete(r.unlisted, name)
	r.mu.Unlock()
}

// Names lists the registered names, sorted, unlisted ones included.
func (r *Registry[T]) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.m))
	for n := range r.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the value registered under name and its full name; see
// the package doc for how a bare path resolves. A failure is a
// *NotFoundError.
func (r *Registry[T]) Lookup(name string) (T, string, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if v, ok := r.m[name]; ok {
		return v, name, nil
	}
	var zero T
	if pkg, _ := Split(name); pkg == "" {
		var found []string
		for n := range r.m {
			if _, path := Split(n); path == name {
				found = append(found, n)
			}
		}
		slices.Sort(found)
		switch len(found) {
		case 1:
			return r.m[found[0]], found[0], nil
		case 0:
		default:
			return zero, "", &NotFoundError{Kind: r.kind, Plural: r.plural, Name: name, Ambiguous: found, sentinel: r.sentinel}
		}
	}
	known := make([]string, 0, len(r.m))
	for n := range r.m {
		if !r.unlisted[n] {
			known = append(known, n)
		}
	}
	slices.Sort(known)
	e := &NotFoundError{Kind: r.kind, Plural: r.plural, Name: name, Known: known, sentinel: r.sentinel}
	e.Suggestion = closest(name, known)
	return zero, "", e
}

// closest is the registered name most like name, comparing whole names
// and then paths alone, so a missing or wrong package still finds it.
func closest(name string, known []string) string {
	if s, ok := suggest.Closest(name, known); ok {
		return s
	}
	_, path := Split(name)
	paths := make([]string, len(known))
	for i, n := range known {
		_, paths[i] = Split(n)
	}
	if s, ok := suggest.Closest(path, paths); ok {
		return known[slices.Index(paths, s)]
	}
	return ""
}

// NotFoundError is a lookup of a name that is not registered, or a bare
// path that several packages register.
type NotFoundError struct {
	Kind, Plural string
	Name         string
	Suggestion   string   // the closest registered name, if one is close
	Known        []string // every registered name
	Ambiguous    []string // the qualified names a bare path matched
	sentinel     error
}

func (e *NotFoundError) Error() string {
	if len(e.Ambiguous) > 0 {
		return fmt.Sprintf("%s %q is ambiguous: it is registered in more than one package; use one of %s",
			e.Kind, e.Name, strings.Join(e.Ambiguous, ", "))
	}
	if len(e.Known) == 0 {
		return fmt.Sprintf("unknown %s %q: no %s are registered", e.Kind, e.Name, e.Plural)
	}
	msg := fmt.Sprintf("unknown %s %q", e.Kind, e.Name)
	if e.Suggestion != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", e.Suggestion)
	}
	msg = fmt.Sprintf("%s; registered %s: %s", msg, e.Plural, strings.Join(e.Known, ", "))
	if e.Suggestion == "" {
		// Not a typo, most likely: a name some Go package registers.
		msg += fmt.Sprintf(" (a Go package's %s are known only to a program that imports it: see \"Your own tactics\" in README.md)", e.Plural)
	}
	return msg
}

// Is reports whether target is the registry's sentinel error.
func (e *NotFoundError) Is(target error) bool {
	return e.sentinel != nil && errors.Is(e.sentinel, target)
}
