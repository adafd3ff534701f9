package prompts

import (
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/internal/registry"
)

// packages are the prompt packages Go code ships, by name.
var packages = registry.New[*promptPackage]("prompt package", "prompt packages", nil)

type promptPackage struct {
	fsys fs.FS
	once sync.Once
	reg  *Registry
	err  error
}

// RegisterPackage makes the prompt files of fsys (laid out as LoadDir
// reads a folder) available to configs as "name:path": a Go package that
// embeds its prompts registers them in init,
//
//	//go:embed prompts
//	var files embed.FS
//
//	func init() { prompts.RegisterPackage("lab", must(fs.Sub(files, "prompts"))) }
//
// and a config names one with system_prompt_path: lab:research/agent. The
// files are parsed on first use. RegisterPackage panics when name is
// empty, contains ':' or is taken, or fsys is nil: programming errors of
// init code.
func RegisterPackage(name string, fsys fs.FS) {
	if fsys == nil {
		panic("prompts: RegisterPackage " + name + " with a nil file system")
	}
	if strings.Contains(name, ":") {
		panic(fmt.Sprintf("prompts: RegisterPackage: package name %q contains ':'", name))
	}
	packages.MustRegister(name, &promptPackage{fsys: fsys})
}

// Package returns the prompts of the registered package name, parsing its
// files on first use with opts (later calls return the first result). An
// unknown name is an error with a did-you-mean.
func Package(name string, opts ...Option) (*Registry, error) {
	p, _, err := packages.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("prompts: %w", err)
	}
	p.once.Do(func() {
		p.reg, p.err = LoadFS(p.fsys, opts...)
		if p.err != nil {
			p.err = fmt.Errorf("prompt package %s: %w", name, p.err)
		}
	})
	return p.reg, p.err
}

// Lookup returns the prompt ref names: "pkg:path" in the registered
// package pkg (see Package), or a bare path in local, the prompts of a
// config's own folder (nil when it has none).
func Lookup(ref string, local *Registry, opts ...Option) (*dialog.Prompt, error) {
	pkg, path := registry.Split(ref)
	if pkg == "" {
		if local == nil {
			return nil, fmt.Errorf("prompt %q: no prompts folder is loaded (put the file under prompts/ beside the config, set prompts_dir, or name a prompt package as pkg:path)", ref)
		}
		return local.Get(path)
	}
	reg, err := Package(pkg, opts...)
	if err != nil {
		return nil, err
	}
	p, err := reg.Get(path)
	if err != nil {
		return nil, fmt.Errorf("prompt package %s: %w", pkg, err)
	}
	return p, nil
}
