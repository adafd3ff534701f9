// Package yamldup finds the keys written twice in a YAML map, which
// yaml.v3 would otherwise refuse as a whole map, so that a loader can
// report each repeat at its line and go on checking the rest.
package yamldup

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// Key is a key written again in the map that already has it.
type Key struct {
	Node      *yaml.Node // the repeated key, where it is written again
	FirstLine int        // the line of the key's first writing
}

// Message is the problem, as the loaders word it.
func (k Key) Message() string {
	return fmt.Sprintf("duplicate key %q (first at line %d)", k.Node.Value, k.FirstLine)
}

// Remove removes each repeated key, and its value, from every map in n at
// any depth, and returns the repeats in the order they are written: the
// first writing of a key stands. Merge keys (<<) may repeat; a key that
// is not a scalar is kept, for the caller to refuse. Aliases are not
// followed: the map an alias names is visited once, where it is written.
// A nil n has no keys.
func Remove(n *yaml.Node) []Key {
	var keys []Key
	if n != nil {
		remove(n, &keys)
	}
	return keys
}

func remove(n *yaml.Node, keys *[]Key) {
	if n.Kind != yaml.MappingNode {
		for _, c := range n.Content {
			remove(c, keys)
		}
		return
	}
	first := map[string]int{} // key -> line
	kept := n.Content[:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() != "!!merge" {
			if line, ok := first[k.Value]; ok {
				*keys = append(*keys, Key{Node: k, FirstLine: line})
				continue
			}
			first[k.Value] = k.Line
		}
		remove(k, keys)
		remove(v, keys)
		kept = append(kept, k, v)
	}
	n.Content = kept
}
