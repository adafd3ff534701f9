package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// modulePath is the lllm-go module, whose version the CLI reports.
const modulePath = "github.com/lllm-go/lllm"

func newVersionCmd() *cobra.Command {
	format := newEnum("text", "text", "json")
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of lllm and of Go it was built with",
		Long: `Print the version of the lllm-go module this binary was built from, as
recorded in its build information ("(devel)" for a build from a working
tree), the VCS commit when the build recorded one, and the Go version and
platform.

In a binary of your own that embeds the CLI, it is the version of the
lllm-go module it depends on.

-o json prints {version, module, go_version, os, arch}, with the full
commit, and modified set when the working tree had changes, when the build
recorded them.`,
		Example: `  lllm version
  lllm version -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := newOutput(cmd)
			if format.value == "json" {
				if err := writeJSON(out, buildVersion()); err != nil {
					return err
				}
			} else {
				fmt.Fprintln(out, versionString())
			}
			return out.flush()
		},
	}
	addFormatFlag(cmd, "output", format)
	noLogDir(cmd, "it reads no runs")
	return cmd
}

// versionJSON is what this binary was built from: the output of version
// -o json.
type versionJSON struct {
	// Version is the lllm-go module's, "(devel)" for a build from a
	// working tree; Module is its path.
	Version string `json:"version"`
	Module  string `json:"module"`
	// Commit is the VCS revision the build recorded, and Modified whether
	// its tree had changes; only a build of the lllm-go module itself
	// records them.
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
}

// buildVersion reads the version of lllm-go and the commit from the
// binary's build information.
func buildVersion() versionJSON {
	v := versionJSON{Version: "(devel)", Module: modulePath, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Path == modulePath && bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == modulePath && d.Version != "" {
			v.Version = d.Version
			if d.Replace != nil && d.Replace.Version != "" {
				v.Version = d.Replace.Version
			}
		}
	}
	if bi.Main.Path == modulePath {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
		if v.Commit == "" {
			v.Modified = false // said only of a recorded commit
		}
	}
	return v
}

// versionString is "lllm VERSION [commit]" and the Go version, on two lines.
func versionString() string {
	v := buildVersion()
	s := "lllm " + v.Version
	if commit := v.Commit; commit != "" {
		if len(commit) > 12 {
			commit = commit[:12]
		}
		if v.Modified {
			commit += "-dirty"
		}
		s += " (" + commit + ")"
	}
	return s + "\n" + v.GoVersion + " " + v.OS + "/" + v.Arch
}
