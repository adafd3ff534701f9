package inspect

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/internal/jsontext"
	"github.com/lllm-go/lllm/logs"
)

// Key places a dialog in its run so that it can be matched with the
// dialog in the same place of another run.
type Key struct {
	Owner string `json:"owner"`
	Alias string `json:"alias"`
	// Turn numbers the owner's dialogs with this alias from 1, in the
	// order they appeared. An agent makes its working copy "ALIAS#1" once
	// per Respond, so for a working copy Turn is the agent's turn on ALIAS;
	// a retry "ALIAS#N" has the Turn of the "ALIAS#1" it retries.
	Turn int `json:"turn"`
}

// String is "owner/alias turn N", with "-" for an empty alias.
func (k Key) String() string {
	alias := k.Alias
	if alias == "" {
		alias = "-"
	}
	return k.Owner + "/" + alias + " turn " + strconv.Itoa(k.Turn)
}

// Keys returns the Key of every dialog of t.
func Keys(t *Tree) map[*Node]Key {
	keys := make(map[*Node]Key, len(t.Nodes))
	turns := map[[2]string]int{}
	for _, n := range t.Nodes {
		oa := [2]string{n.Owner, n.Alias}
		turns[oa]++
		k := Key{Owner: n.Owner, Alias: n.Alias, Turn: turns[oa]}
		if n.work.n > 1 {
			// A retry matches the retry of the same turn: that of the
			// first attempt of its chain (parents come first in Nodes).
			first := n
			for first.work.n > 1 {
				first = first.Parent
			}
			k.Turn = keys[first].Turn
		}
		keys[n] = k
	}
	return keys
}

// RunInfo names a run in a Diff.
type RunInfo struct {
	RunID  string      `json:"run_id"`
	Dir    string      `json:"dir"` // the run directory; "" for a tree not loaded from one
	Tactic string      `json:"tactic"`
	Status logs.Status `json:"status"`
}

// Diff is how run B differs from run A.
type Diff struct {
	A RunInfo `json:"a"`
	B RunInfo `json:"b"`
	// Identical is set when nothing below differs: tactic, status, task,
	// config, result, dialogs, messages, tokens and cost.
	Identical bool `json:"identical"`
	// Task is set when the tasks differ; Config lists the differing
	// settings of the resolved configs, by path, in path order.
	Task   *Change  `json:"task,omitempty"`
	Config []Change `json:"config"`
	// Result is set when the runs' results (run_end.result) differ.
	Result *Change `json:"result,omitempty"`
	// ResultChanges, when both results are JSON objects or arrays, are
	// the values in them that differ, by path (as Config's), in path
	// order.
	ResultChanges []Change `json:"result_changes,omitempty"`
	// Divergences are the places where the messages of matched dialogs
	// differ, one per pair of dialogs, in the order A's log wrote them:
	// the first is where the runs first went different ways.
	Divergences []Divergence `json:"divergences"`
	// OnlyA and OnlyB are the dialogs with no match in the other run, in
	// the order they appeared.
	OnlyA []Dialog `json:"only_a"`
	OnlyB []Dialog `json:"only_b"`
	// Dialogs are the matched dialogs, in the order they appeared in A.
	Dialogs []DialogDiff `json:"dialogs"`
	// Total is what every model call of each run cost.
	Total CostDelta `json:"total"`
}

// Change is a value that differs between the runs, as compact JSON.
type Change struct {
	Path string `json:"path,omitempty"`
	A    string `json:"a"` // empty when A lacks the setting
	B    string `json:"b"` // empty when B lacks the setting
}

// Dialog is a dialog of one run.
type Dialog struct {
	Key Key    `json:"key"`
	ID  string `json:"id"`
}

// CostDelta is a cost in both runs and B minus A.
type CostDelta struct {
	A     dialog.Cost `json:"a"`
	B     dialog.Cost `json:"b"`
	Delta dialog.Cost `json:"delta"`
}

func newCostDelta(a, b dialog.Cost) CostDelta {
	d := dialog.Cost{Usage: dialog.Usage{
		InputTokens:       b.InputTokens - a.InputTokens,
		CachedInputTokens: b.CachedInputTokens - a.CachedInputTokens,
		CacheWriteTokens:  b.CacheWriteTokens - a.CacheWriteTokens,
		OutputTokens:      b.OutputTokens - a.OutputTokens,
		ReasoningTokens:   b.ReasoningTokens - a.ReasoningTokens,
	}, USD: b.USD - a.USD}
	return CostDelta{A: a, B: b, Delta: d}
}

// Equal reports whether the two costs are the same.
func (c CostDelta) Equal() bool { return c.A == c.B }

// DialogDiff compares a dialog of A with its match in B.
type DialogDiff struct {
	Key       Key    `json:"key"`
	A         string `json:"a"` // the dialog ids
	B         string `json:"b"`
	MessagesA int    `json:"messages_a"`
	MessagesB int    `json:"messages_b"`
	// FirstDiff is the position of the first message that differs (or
	// that only one has), -1 when the transcripts are the same.
	FirstDiff int `json:"first_diff"`
	// Cost is what the dialogs' own messages record (as 'lllm tree'
	// shows), CallCost what their model_call records cost.
	Cost     CostDelta `json:"cost"`
	CallCost CostDelta `json:"call_cost"`
}

// Same reports whether the two dialogs have the same messages and cost.
func (d *DialogDiff) Same() bool {
	return d.FirstDiff < 0 && d.Cost.Equal() && d.CallCost.Equal()
}

// Divergence is where the messages of a pair of matched dialogs first
// differ: the first message whose content differs, or that only one of
// the dialogs has.
//
// A fork's inherited messages are compared in the dialog that wrote them:
// when the two forks were made alike from matched parents, a difference
// among the messages they inherited is the parents' divergence (or an
// earlier ancestor's), and the forks' own divergence, if any, is among the
// messages they added.
type Divergence struct {
	Key Key `json:"key"`
	// A and B are the ids of the dialogs holding it.
	A string `json:"a"`
	B string `json:"b"`
	// Index is the message's position in its dialog.
	Index int `json:"index"`
	// RoleA and RoleB are the message's role in each run, empty when that
	// run's dialog has no message at Index.
	RoleA string `json:"role_a"`
	RoleB string `json:"role_b"`
	// Diff is a short line diff of the two messages: "- " lines only in A,
	// "+ " lines only in B, "  " context.
	Diff string `json:"diff"`
	// LaterDiffer counts the messages after Index that both dialogs have
	// and that differ too; ExtraA and ExtraB those after Index that only
	// A's or only B's dialog has.
	LaterDiffer int `json:"later_differ"`
	ExtraA      int `json:"extra_a"`
	ExtraB      int `json:"extra_b"`
}

// First returns the first divergence in A's log, or nil when no message
// differs.
func (d *Diff) First() *Divergence {
	if len(d.Divergences) == 0 {
		return nil
	}
	return &d.Divergences[0]
}

// ErrNoMessages is returned by Compare for a tree read without
// Options.Messages.
var ErrNoMessages = errors.New("inspect: compare needs trees read with Options.Messages")

// Compare aligns the dialogs of a and b by Key and reports how b differs
// from a. Both trees must have been read with Options.Messages.
func Compare(a, b *Tree) (*Diff, error) {
	if a.Forest == nil || b.Forest == nil {
		return nil, ErrNoMessages
	}
	d := &Diff{
		A:           RunInfo{RunID: a.RunID, Dir: a.Dir, Tactic: a.Tactic, Status: a.Status},
		B:           RunInfo{RunID: b.RunID, Dir: b.Dir, Tactic: b.Tactic, Status: b.Status},
		Config:      []Change{},
		Divergences: []Divergence{},
		OnlyA:       []Dialog{},
		OnlyB:       []Dialog{},
		Dialogs:     []DialogDiff{},
		Total:       newCostDelta(a.Total(), b.Total()),
	}
	d.compareRuns(a, b)
	d.Divergences = append(d.Divergences, dropKeptReplies(d.compareDialogs(a, b))...)
	d.Identical = d.A.Tactic == d.B.Tactic && d.A.Status == d.B.Status &&
		d.Task == nil && len(d.Config) == 0 && d.Result == nil && len(d.Divergences) == 0 && len(d.OnlyA) == 0 &&
		len(d.OnlyB) == 0 && d.Total.Equal()
	for i := range d.Dialogs {
		if !d.Dialogs[i].Same() {
			d.Identical = false
		}
	}
	return d, nil
}

// compareRuns sets what differs between the runs of a and b as a whole:
// their task, config and result.
func (d *Diff) compareRuns(a, b *Tree) {
	if a.Start != nil && b.Start != nil {
		if ta, tb := compact(a.Start.Task), compact(b.Start.Task); ta != tb {
			d.Task = &Change{A: ta, B: tb}
		}
		d.Config = jsonChanges(a.Start.Config, b.Start.Config)
	}
	if ra, rb := result(a), result(b); ra != rb {
		d.Result = &Change{A: ra, B: rb}
		if xa, xb := rawResult(a), rawResult(b); structured(xa) && structured(xb) {
			d.ResultChanges = jsonChanges(xa, xb)
		}
	}
}

// foundDivergence is a divergence with when A's log wrote its message.
type foundDivergence struct {
	at   int64
	v    Divergence
	na   *Node
	x, y *dialog.Message // A's and B's message at v.Index; nil for none
}

// compareDialogs matches the dialogs of a and b by Key, sets the dialogs
// of d (matched, only in A, only in B) and returns the divergences of the
// matched ones in A's log order; divergences at the same place (past the
// end of dialogs of A) keep the order the dialogs appeared in.
func (d *Diff) compareDialogs(a, b *Tree) []foundDivergence {
	keysA, keysB := Keys(a), Keys(b)
	byKeyB := make(map[Key]*Node, len(keysB))
	for n, k := range keysB {
		byKeyB[k] = n
	}
	match := make(map[*Node]*Node, len(a.Nodes)) // A's dialog to its match in B
	matched := make(map[*Node]bool, len(b.Nodes))
	var fs []foundDivergence
	// pairs holds every matched dialog of A's comparison with its match
	// for their forks: nodes come parents first.
	pairs := make(map[*Node]*pair, len(a.Nodes))
	for _, na := range a.Nodes {
		k := keysA[na]
		nb := byKeyB[k]
		if nb == nil {
			d.OnlyA = append(d.OnlyA, Dialog{Key: k, ID: na.ID})
			continue
		}
		match[na] = nb
		matched[nb] = true
		p := comparePair(a.Forest.Dialog(na.ID), b.Forest.Dialog(nb.ID), na, nb, match, pairs)
		pairs[na] = p
		d.Dialogs = append(d.Dialogs, DialogDiff{
			Key: k, A: na.ID, B: nb.ID, MessagesA: na.Messages, MessagesB: nb.Messages, FirstDiff: p.first.i,
			Cost: newCostDelta(na.Cost, nb.Cost), CallCost: newCostDelta(na.CallCost, nb.CallCost),
		})
		at := p.first
		if inh := inherited(na, nb, match); at.i >= 0 && at.i < inh {
			at = p.from(inh)
		}
		p.ma, p.mb = messages{}, messages{} // its forks need only what p keeps
		i := at.i
		if i < 0 {
			continue
		}
		v := Divergence{Key: k, A: na.ID, B: nb.ID, Index: i}
		x, y := at.x, at.y
		v.RoleA, v.RoleB, v.Diff = role(x), role(y), at.messageDiff()
		if common := min(p.lenA, p.lenB); i < common {
			v.LaterDiffer = p.differing(common) - p.differing(i+1)
		}
		v.ExtraA = max(0, p.lenA-max(i+1, p.lenB))
		v.ExtraB = max(0, p.lenB-max(i+1, p.lenA))
		fs = append(fs, foundDivergence{divergedAt(na, i), v, na, x, y})
	}
	for _, nb := range b.Nodes {
		if !matched[nb] {
			d.OnlyB = append(d.OnlyB, Dialog{Key: keysB[nb], ID: nb.ID})
		}
	}
	slices.SortStableFunc(fs, func(x, y foundDivergence) int { return cmp.Compare(x.at, y.at) })
	return fs
}

// dropKeptReplies returns the divergences of fs, but those that say again
// what an earlier one says. An agent's reply is written twice: in the
// working copy it was made in (ALIAS#N), then in the dialog that keeps it
// (ALIAS). When the keeping dialog diverges at that reply, it says again
// what its working copy's divergence, written first, says: it is left
// out.
func dropKeptReplies(fs []foundDivergence) []Divergence {
	byNode := make(map[*Node]int, len(fs))
	for i, f := range fs {
		byNode[f.na] = i
	}
	dup := make([]bool, len(fs))
	for _, f := range fs {
		if i, ok := byNode[keeper(f.na)]; ok && same(f.x, fs[i].x) && same(f.y, fs[i].y) {
			dup[i] = true
		}
	}
	var out []Divergence
	for i, f := range fs {
		if !dup[i] {
			out = append(out, f.v)
		}
	}
	return out
}

// structured says whether raw is a JSON object or array.
func structured(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && (raw[0] == '{' || raw[0] == '[')
}

// result is a run's result as compact JSON; empty without one.
func result(t *Tree) string { return compact(rawResult(t)) }

// rawResult is a run's result (run_end.result); nil without one, as for a
// run that never ended.
func rawResult(t *Tree) json.RawMessage {
	if t.End == nil {
		return nil
	}
	return t.End.Result
}

func role(m *dialog.Message) string {
	if m == nil {
		return ""
	}
	return string(m.Role)
}

// inherited is how many messages of na Compare leaves to its parent: all
// it inherited when its parent is matched with nb's and both forks were
// made alike (so their inherited messages differ only where their parents
// do), else none. match maps A's dialogs to their matches in B.
func inherited(na, nb *Node, match map[*Node]*Node) int {
	if na.Parent == nil || nb.Parent == nil || match[na.Parent] != nb.Parent ||
		na.SplitPoint != nb.SplitPoint || na.LastN != nb.LastN || na.FirstK != nb.FirstK || na.ParentLen != nb.ParentLen {
		return 0
	}
	return na.SplitPoint
}

// divergedAt is when, in A's log, the message at index i of n was written:
// the seq of n's own message, the fork's seq for an inherited message, or
// just after n's last message when n has fewer than i+1.
func divergedAt(n *Node, i int) int64 {
	switch {
	case i < n.SplitPoint:
		return n.Seq
	case i-n.SplitPoint < len(n.MessageSeqs):
		return n.MessageSeqs[i-n.SplitPoint]
	case len(n.MessageSeqs) > 0:
		return n.MessageSeqs[len(n.MessageSeqs)-1] + 1
	}
	return n.Seq + 1
}

// pair is the comparison of a dialog of A with its match in B.
//
// Forks of matched parents that both kept all their parents' first
// messages start with the parents' first pre messages, which compare as
// the parents' do: a pair compares its messages from pre on only, and
// takes what it needs of the earlier ones from its parents' pair. So a
// fork chain is compared in time linear in its length.
type pair struct {
	lenA, lenB int // the dialogs' message counts
	// pre is where the messages compared by this pair start; base is how
	// many of the messages before it differ.
	pre, base int
	// diffs are the positions from pre on where both dialogs have a
	// message and the two differ, in order.
	diffs  []int
	first  *msgDiff // the first difference
	ma, mb messages
}

// msgDiff is the first position from some point on where two dialogs
// differ, and their messages there.
type msgDiff struct {
	i    int             // -1 for none
	x, y *dialog.Message // A's and B's message at i; nil for none
	diff string          // messageDiff of x and y, once made
	made bool
}

// messageDiff is the diff of the messages, made once.
func (m *msgDiff) messageDiff() string {
	if !m.made {
		m.diff, m.made = messageDiff(m.x, m.y, 24), true
	}
	return m.diff
}

// comparePair compares da and db, the dialogs of na and nb. pairs holds
// the pairs of the dialogs before na in A, match their matches in B.
func comparePair(da, db *dialog.Dialog, na, nb *Node, match map[*Node]*Node, pairs map[*Node]*pair) *pair {
	p := &pair{}
	var parent *pair
	if na.Parent != nil && nb.Parent != nil && match[na.Parent] == nb.Parent && na.LastN == 0 && nb.LastN == 0 {
		parent = pairs[na.Parent]
		p.pre = min(na.SplitPoint, nb.SplitPoint)
		p.base = parent.differing(p.pre)
	}
	p.ma, p.mb = messagesFrom(da, p.pre), messagesFrom(db, p.pre)
	p.lenA, p.lenB = p.ma.len(), p.mb.len()
	for j := p.pre; j < min(p.lenA, p.lenB); j++ {
		if differ(p.ma.at(j), p.mb.at(j)) {
			p.diffs = append(p.diffs, j)
		}
	}
	if parent != nil && parent.first.i >= 0 && parent.first.i < p.pre {
		p.first = parent.first
	} else {
		p.first = p.from(p.pre)
	}
	return p
}

// from is the first difference from position i on, which must not be
// below p.pre: the first message that differs, or that only one dialog
// has.
func (p *pair) from(i int) *msgDiff {
	k, _ := slices.BinarySearch(p.diffs, i)
	at := -1
	switch {
	case k < len(p.diffs):
		at = p.diffs[k]
	case p.lenA != p.lenB:
		at = max(i, min(p.lenA, p.lenB))
	}
	if at < 0 {
		return &msgDiff{i: -1}
	}
	return &msgDiff{i: at, x: p.ma.at(at), y: p.mb.at(at)}
}

// differing counts the positions before j where both dialogs have a
// message and the two differ. j must be at most one past the first
// difference, or not below p.pre and not past the messages both have.
func (p *pair) differing(j int) int {
	switch {
	case j >= p.pre:
		k, _ := slices.BinarySearch(p.diffs, j)
		return p.base + k
	case p.first.i < 0 || j <= p.first.i:
		return 0
	}
	return 1 // j is one past the first difference, below pre: both have it
}

// messages are a dialog's messages from the one at off on.
type messages struct {
	off int
	ms  []*dialog.Message
}

// messagesFrom returns d's messages from the one at from on (or from
// d's length when from is past it). A fork's messages are a list it
// shares with its ancestors, each message found by walking down it from
// the fork's own: the whole list is copied in one walk when from is 0,
// else the messages are taken one by one, as those from a split point
// on are near the top.
func messagesFrom(d *dialog.Dialog, from int) messages {
	n := d.Len()
	from = min(from, n)
	if from == 0 {
		return messages{0, d.Messages()}
	}
	ms := make([]*dialog.Message, 0, n-from)
	for i := from; i < n; i++ {
		ms = append(ms, d.At(i))
	}
	return messages{from, ms}
}

// len is the dialog's message count.
func (m messages) len() int { return m.off + len(m.ms) }

// at is message i, or nil when the dialog has no message i; i must not
// be below m.off.
func (m messages) at(i int) *dialog.Message {
	if i < 0 || i >= m.len() {
		return nil
	}
	return m.ms[i-m.off]
}

// keeper is the dialog the replies of the working copy n are kept in: the
// agent's dialog whose alias is n's without "#N", n's nearest ancestor
// that is not a working copy. It is nil when n is not a working copy.
func keeper(n *Node) *Node {
	base, _, ok := strings.Cut(n.Alias, "#")
	if !ok {
		return nil
	}
	for p := n.Parent; p != nil; p = p.Parent {
		if !strings.Contains(p.Alias, "#") {
			if p.Owner != n.Owner || p.Alias != base {
				return nil
			}
			return p
		}
	}
	return nil
}

// same reports whether two messages, either of which may be nil for
// none, have the same content.
func same(a, b *dialog.Message) bool {
	if a == nil || b == nil {
		return a == b
	}
	return !differ(a, b)
}

// differ reports whether two messages differ in content.
func differ(a, b *dialog.Message) bool {
	return a != b && messageText(a) != messageText(b)
}

// messageText is what Compare compares of a message, as text: its sender,
// its content, its images (by size and checksum) and its tool calls.
// Usage, cost, model and parsed output are not content.
func messageText(m *dialog.Message) string {
	var b strings.Builder
	b.WriteString("[")
	b.WriteString(string(m.Role))
	if m.Name != "" {
		b.WriteString(" " + m.Name)
	}
	if m.Agent != "" {
		b.WriteString(" (agent " + m.Agent + ")")
	}
	b.WriteString("]\n")
	for _, r := range m.Reasoning { // its text: signatures differ from call to call
		switch {
		case r.Text != "":
			b.WriteString("reasoning: " + r.Text + "\n")
		case r.Redacted != "":
			b.WriteString("reasoning: [redacted]\n")
		}
	}
	b.WriteString(m.Text())
	for _, p := range m.Parts {
		if p.Type == dialog.PartImage && p.Image != nil {
			fmt.Fprintf(&b, "\n[image %s, %d bytes, crc32 %08x%s]", p.Image.MIME, len(p.Image.Data), crc32.ChecksumIEEE(p.Image.Data), p.Image.URL)
		}
	}
	for _, fc := range m.FunctionCalls {
		fmt.Fprintf(&b, "\n→ %s(%s)", fc.Name, compact(fc.Arguments))
		if fc.Result != "" {
			b.WriteString(" = " + fc.Result)
		}
		if fc.Error != "" {
			b.WriteString(" ✗ " + fc.Error)
		}
	}
	return b.String()
}

// messageDiff is a line diff of a and b (either may be nil) of at most
// maxLines lines.
func messageDiff(a, b *dialog.Message, maxLines int) string {
	var ta, tb []string
	if a != nil {
		ta = strings.Split(messageText(a), "\n")
	} else {
		ta = []string{"(no message)"}
	}
	if b != nil {
		tb = strings.Split(messageText(b), "\n")
	} else {
		tb = []string{"(no message)"}
	}
	return lineDiff(ta, tb, maxLines)
}

// lineDiff is a unified-style diff of a and b: the lines between their
// common prefix and suffix, aligned by a longest common subsequence when
// they are short enough, with up to two lines of context, cut to
// maxLines lines.
func lineDiff(a, b []string, maxLines int) string {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var out []string
	for i := max(0, pre-2); i < pre; i++ {
		out = append(out, "  "+clip(a[i]))
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if len(ma)*len(mb) <= 40000 {
		out = append(out, lcsDiff(ma, mb)...)
	} else {
		for _, l := range ma {
			out = append(out, "- "+clip(l))
		}
		for _, l := range mb {
			out = append(out, "+ "+clip(l))
		}
	}
	for i := len(a) - suf; i < len(a)-suf+min(2, suf); i++ {
		out = append(out, "  "+clip(a[i]))
	}
	out = hunks(out, 2)
	if len(out) > maxLines {
		more := len(out) - maxLines + 1
		out = append(out[:maxLines-1], fmt.Sprintf("… (%d more lines)", more))
	}
	return strings.Join(out, "\n")
}

// hunks keeps, of each run of context lines ("  ") in a diff, the ctx
// lines next to a change on either side, and replaces the others with one
// line that counts them, so that a change far from the first one still
// shows within the diff's cut.
func hunks(lines []string, ctx int) []string {
	out := lines[:0:0]
	for i := 0; i < len(lines); {
		if !strings.HasPrefix(lines[i], "  ") {
			out = append(out, lines[i])
			i++
			continue
		}
		j := i
		for j < len(lines) && strings.HasPrefix(lines[j], "  ") {
			j++
		}
		head, tail := ctx, ctx // lines kept after a change, before the next
		if i == 0 {
			head = 0
		}
		if j == len(lines) {
			tail = 0
		}
		if n := j - i - head - tail; n > 1 {
			out = append(out, lines[i:i+head]...)
			out = append(out, fmt.Sprintf("… %d unchanged lines", n))
			out = append(out, lines[j-tail:j]...)
		} else {
			out = append(out, lines[i:j]...)
		}
		i = j
	}
	return out
}

// lcsDiff diffs two short line lists with a longest common subsequence.
func lcsDiff(a, b []string) []string {
	n, m := len(a), len(b)
	l := make([][]int, n+1)
	for i := range l {
		l[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			out = append(out, "  "+clip(a[i]))
			i, j = i+1, j+1
		case i < n && (j == m || l[i+1][j] >= l[i][j+1]):
			out = append(out, "- "+clip(a[i]))
			i++
		default:
			out = append(out, "+ "+clip(b[j]))
			j++
		}
	}
	return out
}

// clip cuts a line to 160 bytes.
func clip(s string) string { return firstLine(s, 160) }

// compact is raw JSON on one line ("" for none), or the raw text if it is
// not JSON.
func compact(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	if c, ok := jsontext.Compact(raw); ok {
		return c
	}
	return string(raw)
}

// jsonChanges lists the leaves that differ between two JSON documents,
// by path ("global.model_args.temperature", "agent_configs[0].name").
func jsonChanges(a, b json.RawMessage) []Change {
	fa, fb := map[string]string{}, map[string]string{}
	flatten(a, "", fa)
	flatten(b, "", fb)
	out := []Change{}
	for p, va := range fa {
		if vb, ok := fb[p]; !ok || va != vb {
			out = append(out, Change{Path: p, A: va, B: fb[p]})
		}
	}
	for p, vb := range fb {
		if _, ok := fa[p]; !ok {
			out = append(out, Change{Path: p, B: vb})
		}
	}
	sort.Slice(out, func(i, j int) bool { return pathLess(out[i].Path, out[j].Path) })
	return out
}

// pathLess orders dotted paths key by key, and list indexes by number:
// candidates.2 before candidates.10.
func pathLess(a, b string) bool {
	sa, sb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range min(len(sa), len(sb)) {
		x, y := sa[i], sb[i]
		if x == y {
			continue
		}
		nx, errx := strconv.Atoi(x)
		ny, erry := strconv.Atoi(y)
		if errx == nil && erry == nil && nx != ny {
			return nx < ny
		}
		return x < y
	}
	return len(sa) < len(sb)
}

func flatten(raw json.RawMessage, path string, into map[string]string) {
	if len(raw) == 0 {
		return
	}
	var obj map[string]json.RawMessage
	if raw[0] == '{' && json.Unmarshal(raw, &obj) == nil {
		for k, v := range obj {
			p := k
			if path != "" {
				p = path + "." + k
			}
			flatten(v, p, into)
		}
		return
	}
	var arr []json.RawMessage
	if raw[0] == '[' && json.Unmarshal(raw, &arr) == nil && len(arr) > 0 {
		for i, v := range arr {
			// As --set writes it: an entry with a name by its name
			// (agent_configs.judge), else by its index.
			seg := strconv.Itoa(i)
			var named struct{ Name string }
			if json.Unmarshal(v, &named) == nil && named.Name != "" && !strings.Contains(named.Name, ".") {
				seg = named.Name
			}
			if path != "" {
				seg = path + "." + seg
			}
			flatten(v, seg, into)
		}
		return
	}
	into[path] = compact(raw)
}

// maxResultChanges is how many of a diff's ResultChanges its text shows.
const maxResultChanges = 10

// TextOptions are the choices of Diff.WriteText.
type TextOptions struct {
	// Max is how many divergences to show; 0 shows them all.
	Max int
	// MoreHint follows, in parentheses, the line that counts the
	// divergences Max leaves out: how to see them, such as
	// "--max 0 shows all".
	MoreHint string
}

// WriteText writes the diff for people: the runs, what differs in their
// task and config, each divergence in order with a diff of its message
// (up to opts.Max), the dialogs only one run has, and the token and cost
// differences of the dialogs whose cost differs. Identical runs print one
// line starting with "identical".
func (d *Diff) WriteText(w io.Writer, opts TextOptions) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "A %s (%s, %s)\nB %s (%s, %s)\n", d.A.RunID, d.A.Tactic, d.A.Status, d.B.RunID, d.B.Tactic, d.B.Status)
	if d.Identical {
		fmt.Fprintf(&b, "identical: %d dialogs, tokens %d, %s\n", len(d.Dialogs), d.Total.A.Total(), USD(d.Total.A.USD))
		_, err := w.Write(b.Bytes())
		return err
	}
	if d.A.Tactic != d.B.Tactic {
		fmt.Fprintf(&b, "tactic: %s → %s\n", d.A.Tactic, d.B.Tactic)
	}
	if d.A.Status != d.B.Status {
		fmt.Fprintf(&b, "status: %s → %s\n", d.A.Status, d.B.Status)
	}
	if d.Task != nil {
		fmt.Fprintf(&b, "task: %s → %s\n", short(d.Task.A), short(d.Task.B))
	}
	if len(d.Config) > 0 {
		b.WriteString("config:\n")
		for _, c := range d.Config {
			fmt.Fprintf(&b, "  %s: %s → %s\n", c.Path, short(c.A), short(c.B))
		}
	}
	switch r := d.Result; {
	case len(d.ResultChanges) > 0:
		b.WriteString("result:\n")
		for i, c := range d.ResultChanges {
			if i == maxResultChanges && len(d.ResultChanges) > maxResultChanges+1 {
				fmt.Fprintf(&b, "  … and %d more (-o json has them all)\n", len(d.ResultChanges)-i)
				break
			}
			fmt.Fprintf(&b, "  %s: %s → %s\n", c.Path, short(c.A), short(c.B))
		}
	case r != nil:
		fmt.Fprintf(&b, "result: %s → %s\n", short(r.A), short(r.B))
	}
	writeDivergences(&b, d.Divergences, opts)
	for _, o := range d.OnlyA {
		fmt.Fprintf(&b, "only in A: %s [%s]\n", o.Key, ShortID(o.ID))
	}
	for _, o := range d.OnlyB {
		fmt.Fprintf(&b, "only in B: %s [%s]\n", o.Key, ShortID(o.ID))
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	same := 0
	header := false
	for i := range d.Dialogs {
		dd := &d.Dialogs[i]
		if dd.Cost.Equal() && dd.CallCost.Equal() && dd.MessagesA == dd.MessagesB {
			same++
			continue
		}
		if !header {
			fmt.Fprintln(tw, "dialog\tmsgs A→B\ttokens A→B (Δ)\tcall tokens A→B (Δ)\tusd A→B (Δ)")
			header = true
		}
		c := dd.Cost
		if c.Equal() && !dd.CallCost.Equal() {
			c = dd.CallCost
		}
		calls := "-"
		if dd.CallCost.A.Total() != 0 || dd.CallCost.B.Total() != 0 {
			calls = tokensDelta(dd.CallCost)
		}
		fmt.Fprintf(tw, "%s\t%d→%d\t%s\t%s\t%s\n", dd.Key, dd.MessagesA, dd.MessagesB, tokensDelta(dd.Cost), calls, usdDelta(c))
	}
	fmt.Fprintf(tw, "total (model calls)\t\t\t%s\t%s\n", tokensDelta(d.Total), usdDelta(d.Total))
	if err := tw.Flush(); err != nil {
		return err
	}
	if same > 0 {
		fmt.Fprintf(&b, "(%d matched dialogs with the same size and cost not shown)\n", same)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeDivergences writes a block per divergence, up to opts.Max: a line
// that places it and counts what differs after it, then the diff of its
// message indented by two spaces.
func writeDivergences(b *bytes.Buffer, ds []Divergence, opts TextOptions) {
	if len(ds) == 0 {
		b.WriteString("no message differs\n")
		return
	}
	shown := ds
	if opts.Max > 0 && len(ds) > opts.Max {
		shown = ds[:opts.Max]
	}
	for i := range shown {
		v := &shown[i]
		fmt.Fprintf(b, "divergence %d of %d: %s (A %s, B %s), message %d", i+1, len(ds), v.Key, ShortID(v.A), ShortID(v.B), v.Index)
		var after []string
		if v.LaterDiffer > 0 {
			after = append(after, plural(v.LaterDiffer, "later message differs", "later messages differ"))
		}
		if v.ExtraA > 0 {
			after = append(after, fmt.Sprintf("A has %d more", v.ExtraA))
		}
		if v.ExtraB > 0 {
			after = append(after, fmt.Sprintf("B has %d more", v.ExtraB))
		}
		if len(after) > 0 {
			b.WriteString("; " + strings.Join(after, ", "))
		}
		b.WriteString("\n")
		for _, l := range strings.Split(v.Diff, "\n") {
			// A context line of an empty line is blank: no trailing spaces.
			b.WriteString(strings.TrimRight("  "+l, " ") + "\n")
		}
	}
	if more := len(ds) - len(shown); more > 0 {
		fmt.Fprintf(b, "… and %d more", more)
		if opts.MoreHint != "" {
			b.WriteString(" (" + opts.MoreHint + ")")
		}
		b.WriteString("\n")
	}
}

// plural is n and one or many, by n.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func tokensDelta(c CostDelta) string {
	return fmt.Sprintf("%d→%d (%+d)", c.A.Total(), c.B.Total(), c.Delta.Total())
}

func usdDelta(c CostDelta) string {
	if c.A.USD == 0 && c.B.USD == 0 {
		return "-"
	}
	sign := "+"
	if c.Delta.USD < 0 {
		sign = "-"
	}
	return fmt.Sprintf("%s→%s (%s%s)", USD(c.A.USD), USD(c.B.USD), sign, USD(math.Abs(c.Delta.USD)))
}

// short cuts a value for a one-line display; "(none)" for an empty one.
func short(s string) string {
	if s == "" {
		return "(none)"
	}
	return firstLine(s, 80)
}
