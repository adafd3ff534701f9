package yamldup

import (
	"reflect"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestRemove(t *testing.T) {
	src := "a: 1\nb:\n  c: 1\n  c: 2\n  d: [{e: 1, e: 2}]\na: 3\n<<: {f: 1}\n"
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(src), &root); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range Remove(&root) {
		got = append(got, k.Message())
	}
	want := []string{
		`duplicate key "c" (first at line 3)`,
		`duplicate key "e" (first at line 5)`,
		`duplicate key "a" (first at line 1)`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Remove:\ngot  %q\nwant %q", got, want)
	}
	out, err := yaml.Marshal(&root)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(out, &v); err != nil {
		t.Fatalf("the map left still has a repeat: %v\n%s", err, out)
	}
	if v["a"] != 1 || v["f"] != 1 || !reflect.DeepEqual(v["b"], map[string]any{"c": 1, "d": []any{map[string]any{"e": 1}}}) {
		t.Errorf("the first writings do not stand: %v", v)
	}
}

// Merge keys (<<) may repeat: each is kept.
func TestRemoveKeepsMergeKeys(t *testing.T) {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte("<<: {f: 1}\n<<: {g: 2}\n"), &root); err != nil {
		t.Fatal(err)
	}
	if keys := Remove(&root); len(keys) != 0 {
		t.Errorf("Remove: %v", keys)
	}
	if n := len(root.Content[0].Content); n != 4 {
		t.Errorf("%d nodes left in the map, want 4", n)
	}
}

func TestRemoveNil(t *testing.T) {
	if keys := Remove(nil); keys != nil {
		t.Errorf("Remove(nil) = %v", keys)
	}
}
