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
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of lllm and of Go it was built with",
		Long: `Print the version of the lllm-go module this binary was built from, as
recorded in its build information ("(devel)" for a build from a working
tree), the VCS commit when the build recorded one, and the Go version and
platform.

In a binary of your own that embeds the CLI, it is the version of the
lllm-go module it depends on.`,
		Example: `  lllm version`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := newOutput(cmd)
			fmt.Fprintln(out, versionString())
			return out.flush()
		},
	}
}

// versionString is "lllm VERSION [commit]" and the Go version, on two lines.
func versionString() string {
	version, commit := "(devel)", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path == modulePath && bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, d := range bi.Deps {
			if d.Path == modulePath && d.Version != "" {
				version = d.Version
				if d.Replace != nil && d.Replace.Version != "" {
					version = d.Replace.Version
				}
			}
		}
		if bi.Main.Path == modulePath {
			var dirty bool
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					commit = s.Value
				case "vcs.modified":
					dirty = s.Value == "true"
				}
			}
			if len(commit) > 12 {
				commit = commit[:12]
			}
			if commit != "" && dirty {
				commit += "-dirty"
			}
		}
	}
	s := "lllm " + version
	if commit != "" {
		s += " (" + commit + ")"
	}
	return s + "\n" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
}
