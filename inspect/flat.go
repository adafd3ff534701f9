package inspect

import (
	"bufio"
	"fmt"
	"io"
	"strconv"

	"github.com/lllm-go/lllm/internal/jsontext"
)

// FlatJSONTree is the document WriteFlatJSON writes: FormatJSON's with the
// dialogs in a flat list, so that a chain of forks of any length nests no
// deeper than a short one.
type FlatJSONTree struct {
	RunID   string          `json:"run_id"`
	Dir     string          `json:"dir"` // the run directory; "" when not loaded from one
	Dialogs []*FlatJSONNode `json:"dialogs"`
}

// FlatJSONNode is one dialog in a FlatJSONTree: the fields of a JSONNode
// but Children, and Parent. The dialogs are listed depth first, as the
// text tree shows them: a parent before its forks.
type FlatJSONNode struct {
	JSONDialog
	// Parent is the id of the dialog's parent in the list, which comes
	// before it. It is absent for the dialogs the list starts from: the
	// roots, or the dialogs of Selection.Start, whose ParentID may name a
	// dialog left out.
	Parent string `json:"parent,omitempty"`
}

// WriteFlatJSON writes the FlatJSONTree of the dialogs sel picks from t as
// compact JSON, one dialog a line, streamed as the tree is walked:
//
//	{"run_id":"…","dir":"…","dialogs":[
//	{"id":"…",…,"fail_reason":""},
//	{"id":"…",…,"fail_reason":"","parent":"…"}
//	]}
func WriteFlatJSON(w io.Writer, t *Tree, sel Selection) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	b := append([]byte(nil), `{"run_id":`...)
	b = jsontext.AppendString(b, t.RunID)
	b = append(b, `,"dir":`...)
	b = jsontext.AppendString(b, t.Dir)
	b = append(b, `,"dialogs":[`...)
	first := true
	err := sel.walk(t, func(n *Node, level int) error {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '\n')
		b = appendFlatNode(b, n, level > 0)
		if len(b) >= 32<<10 {
			if _, err := bw.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("inspect: writing flat json tree: %w", err)
	}
	b = append(b, "\n]}\n"...)
	if _, err := bw.Write(b); err != nil {
		return fmt.Errorf("inspect: writing flat json tree: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("inspect: writing flat json tree: %w", err)
	}
	return nil
}

// appendFlatNode appends n's FlatJSONNode as encoding/json writes it
// without HTML escaping; withParent adds its "parent".
func appendFlatNode(b []byte, n *Node, withParent bool) []byte {
	str := func(key, v string) {
		b = append(b, key...)
		b = jsontext.AppendString(b, v)
	}
	num := func(key string, v int) {
		b = append(b, key...)
		b = strconv.AppendInt(b, int64(v), 10)
	}
	str(`{"id":`, n.ID)
	str(`,"owner":`, n.Owner)
	str(`,"alias":`, n.Alias)
	str(`,"parent_id":`, n.ParentID)
	num(`,"split_point":`, n.SplitPoint)
	num(`,"last_n":`, n.LastN)
	num(`,"first_k":`, n.FirstK)
	num(`,"parent_len":`, n.ParentLen)
	num(`,"depth":`, n.Depth)
	num(`,"messages":`, n.Messages)
	b = append(b, `,"cost":`...)
	b = appendCostJSON(b, n.Cost, -1)
	num(`,"model_calls":`, n.Calls)
	num(`,"call_errors":`, n.CallErrors)
	num(`,"max_tokens_cut":`, n.MaxTokensCut)
	b = append(b, `,"call_cost":`...)
	b = appendCostJSON(b, n.CallCost, -1)
	b = append(b, `,"failed":`...)
	b = strconv.AppendBool(b, n.Failed)
	str(`,"fail_reason":`, n.FailReason)
	if withParent {
		str(`,"parent":`, n.Parent.ID)
	}
	return append(b, '}')
}

// Height is how many levels of forks below its start dialogs sel picks
// from t: 0 when it picks no fork, and for a tree without dialogs.
func (sel Selection) Height(t *Tree) int {
	h := 0
	_ = sel.walk(t, func(_ *Node, level int) error {
		h = max(h, level)
		return nil
	})
	return h
}
