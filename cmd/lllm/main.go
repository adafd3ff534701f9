// Command lllm looks at the runs of lllm-go experiments: it lists them,
// rebuilds their dialog trees from their logs and prints their transcripts.
// Run "lllm --help" for the commands.
//
// Every command lives in package github.com/lllm-go/lllm/cmd/lllm/cli, so a
// binary of your own gets the whole CLI, and can add commands to it, by
// calling cli.Main or by running cli.NewRootCmd itself:
//
//	func main() { cli.Main() }
package main

import "github.com/lllm-go/lllm/cmd/lllm/cli"

func main() { cli.Main() }
