package sweep

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// gridSpec is a sweep spec whose two axes cross n temperatures with n
// max_tokens values: n*n cells.
func gridSpec(n int) string {
	temps := make([]string, n)
	tokens := make([]string, n)
	for i := range n {
		temps[i] = fmt.Sprintf("%g", float64(i)/float64(n))
		tokens[i] = fmt.Sprint(100 + i)
	}
	return "config: config.yaml\ndataset: rows.jsonl\naxes:\n" +
		"  global.model_args.temperature: [" + strings.Join(temps, ", ") + "]\n" +
		"  global.model_args.max_tokens: [" + strings.Join(tokens, ", ") + "]\n"
}

// BenchmarkGrid prepares a sweep of a grid of n x n cells, as
// lllm sweep --dry-run does before it lists them.
func BenchmarkGrid(b *testing.B) {
	for _, n := range []int{10, 100} {
		b.Run(fmt.Sprintf("%dx%d", n, n), func(b *testing.B) {
			path := writeSweep(b, gridSpec(n), map[string]string{})
			spec, err := LoadSpec(path)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				s, err := New(context.Background(), spec, Options{Dir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				if len(s.Cells) != n*n {
					b.Fatalf("%d cells, want %d", len(s.Cells), n*n)
				}
			}
		})
	}
}

// gridHashSpec crosses scalar, list and map values, on agents by name and
// by index, with a zip group, over a config with a base and a --set.
const gridHashSpec = `config: config.yaml
dataset: rows.jsonl
axes:
  agent_configs.assistant.model_args.max_tokens: [10, 20]
  agent_configs.0.system_prompt: [a, "b: c"]
zip:
  global.model_args.temperature: [0, 0.5]
  mock.rules: [[{match: "x", reply: {text: "1"}}], []]
`

// TestGridHashes checks that each cell's hash is what it was when every
// cell re-loaded the base config from disk: a cell's hash names its
// samples, so a change would run a finished sweep again.
func TestGridHashes(t *testing.T) {
	path := writeSweep(t, gridHashSpec, map[string]string{
		"config.yaml": "base: common.yaml\n" + chatConfig,
		"common.yaml": "global: {model_args: {seed: 7}}\n",
	})
	s := newSweep(t, path, Options{Sets: []string{"global.model_args.top_p=0.9"}})
	var got []string
	for _, c := range s.Cells {
		got = append(got, c.Hash)
	}
	want := []string{
		"9a4b30597af44d8c", "927195e2278db53f", "e3f84a5038f5259f", "323591e3ba0ac830",
		"7a3f1c24238027ed", "54d976a39a42c1e0", "33151d8254ed5873", "d2f11a5a4f1b9d36",
	}
	if !slices.Equal(got, want) {
		t.Errorf("cell hashes\n got %q\nwant %q", got, want)
	}
}

// TestGridCellsApart checks that the cells share no config with each
// other or with the base config they all start from.
func TestGridCellsApart(t *testing.T) {
	s := newSweep(t, writeSweep(t, gridHashSpec, map[string]string{}), Options{})
	before := make([]string, len(s.Cells))
	for i, c := range s.Cells {
		before[i] = c.Hash
	}
	base, err := configHash(s.base)
	if err != nil {
		t.Fatal(err)
	}
	c := s.Cells[0].Config
	c.Params = map[string]any{"x": 1}
	c.Agents[0].ModelArgs["max_tokens"] = 99
	c.Global.ModelArgs["temperature"] = 0.9
	if err := c.Set("mock.rules", "[]"); err != nil {
		t.Fatal(err)
	}
	for i, c := range s.Cells[1:] {
		if h, _ := configHash(c.Config); h != before[i+1] {
			t.Errorf("cell %d changed with cell 0", i+1)
		}
		if c.Config.Params != nil || c.Config.Agents[0].ModelArgs["max_tokens"] == 99 || c.Config.Global.ModelArgs["temperature"] == 0.9 {
			t.Errorf("cell %d shares cell 0's fields", i+1)
		}
	}
	if h, _ := configHash(s.base); h != base {
		t.Error("the base config changed with cell 0")
	}
}
