package export

import (
	"fmt"
	"path"
	"strings"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/inspect"
)

// Pattern selects dialogs by name, as lllm show names them: OWNER/ALIAS
// (judge/main), or an ALIAS alone for that alias of any agent. Either part
// may hold the wildcards of path.Match (solver/try*, */main). A pattern
// with '#' names the working copies of an agent's call loop (main#1),
// which no other pattern selects.
type Pattern struct {
	owner, alias string // path.Match patterns; an ALIAS alone has owner "*"
}

// ParsePattern checks s and returns the Pattern it is.
func ParsePattern(s string) (Pattern, error) {
	owner, alias, hasOwner := strings.Cut(s, "/")
	if !hasOwner {
		owner, alias = "*", s
	}
	if owner == "" || alias == "" || strings.Contains(alias, "/") {
		return Pattern{}, fmt.Errorf("dialog pattern %q: want OWNER/ALIAS, such as judge/main or solver/try*, or an ALIAS alone", s)
	}
	for _, p := range []string{owner, alias} {
		if _, err := path.Match(p, ""); err != nil {
			return Pattern{}, fmt.Errorf("dialog pattern %q: %w (the wildcards are *, ? and [...])", s, err)
		}
	}
	return Pattern{owner: owner, alias: alias}, nil
}

// String returns the pattern as OWNER/ALIAS.
func (p Pattern) String() string { return p.owner + "/" + p.alias }

// Match reports whether the dialog of owner and alias matches p.
func (p Pattern) Match(owner, alias string) bool {
	ok, _ := path.Match(p.owner, owner) // checked by ParsePattern
	if !ok {
		return false
	}
	ok, _ = path.Match(p.alias, alias)
	return ok
}

// namesAttempts reports whether p can select a working copy.
func (p Pattern) namesAttempts() bool { return strings.Contains(p.alias, "#") }

// Select returns the dialogs of t worth training on, in tree order (depth
// first from each root, children in fork order, as lllm tree lists
// them): every dialog whose last message is an assistant reply, except
// the working copies of an agent's call loop ("ALIAS#N": each turn's
// attempts, failed ones included, whose kept reply is in ALIAS). With
// patterns, only the dialogs one of them matches; a pattern with '#'
// selects working copies too. t must have been read with its messages
// (inspect.Options.Messages, or inspect.LoadLog).
func Select(t *inspect.Tree, patterns []Pattern) []*inspect.Node {
	var out []*inspect.Node
	var walk func(n *inspect.Node)
	walk = func(n *inspect.Node) {
		if selected(t, n, patterns) {
			out = append(out, n)
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	for _, r := range t.Roots {
		walk(r)
	}
	return out
}

func selected(t *inspect.Tree, n *inspect.Node, patterns []Pattern) bool {
	if t.Forest == nil {
		return false
	}
	d := t.Forest.Dialog(n.ID)
	if d == nil || d.Len() == 0 || d.Tail().Role != dialog.RoleAssistant {
		return false
	}
	_, _, attempt := n.IsWorkingCopy()
	if len(patterns) == 0 {
		return !attempt
	}
	for _, p := range patterns {
		if (!attempt || p.namesAttempts()) && p.Match(n.Owner, n.Alias) {
			return true
		}
	}
	return false
}
