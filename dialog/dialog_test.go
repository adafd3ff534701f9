package dialog

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// dialogOf makes a dialog holding messages m0..m(n-1).
func dialogOf(t testing.TB, n int, opts ...Option) *Dialog {
	t.Helper()
	d, err := New("coder", opts...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := d.PutText(fmt.Sprintf("m%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func contents(d *Dialog) string {
	var s []string
	for _, m := range d.Messages() {
		s = append(s, m.Content)
	}
	return strings.Join(s, ",")
}

func TestForkReferenceExamples(t *testing.T) {
	tests := []struct {
		n, lastN, firstK int
		want             string
		split, wantLastN int
		wantFirstK       int
	}{
		{10, 3, 1, "m0,m7,m8,m9", 4, 3, 1},
		{5, 3, 4, "m0,m1,m2,m3,m4", 5, 3, 2},
		{5, 2, 0, "m3,m4", 2, 2, 0},
		{1, 100, 1, "m0", 1, 0, 1},
		{4, 0, 1, "m0,m1,m2,m3", 4, 0, 1},
		{4, -2, 1, "m0,m1,m2,m3", 4, 0, 1},
		{6, 2, -1, "m4,m5", 2, 2, 0},
		{0, 0, 1, "", 0, 0, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("n=%d/fork(%d,%d)", tt.n, tt.lastN, tt.firstK), func(t *testing.T) {
			d := dialogOf(t, tt.n)
			c, err := d.Fork(tt.lastN, tt.firstK)
			if err != nil {
				t.Fatal(err)
			}
			if got := contents(c); got != tt.want {
				t.Errorf("messages = %q, want %q", got, tt.want)
			}
			n := c.Node()
			if n.SplitPoint != tt.split || n.LastN != tt.wantLastN || n.FirstK != tt.wantFirstK {
				t.Errorf("node split=%d last_n=%d first_k=%d, want %d %d %d", n.SplitPoint, n.LastN, n.FirstK, tt.split, tt.wantLastN, tt.wantFirstK)
			}
			if n.ParentID != d.ID() || n.Owner != "coder" || n.Depth != 1 || n.ParentLen != tt.n {
				t.Errorf("node = %+v, want parent %s owner coder depth 1 parent_len %d", n, d.ID(), tt.n)
			}
			if p := d.Node(); !reflect.DeepEqual(p.ChildrenIDs, []string{c.ID()}) {
				t.Errorf("parent children = %v, want [%s]", p.ChildrenIDs, c.ID())
			}
		})
	}
}

func TestForkIsolation(t *testing.T) {
	parent := dialogOf(t, 5)
	full, _ := parent.Fork(0, 1)
	part, _ := parent.Fork(2, 1)
	if _, err := parent.PutText("parent-after"); err != nil {
		t.Fatal(err)
	}
	if _, err := full.PutText("full-after"); err != nil {
		t.Fatal(err)
	}
	if _, err := part.PutText("part-after"); err != nil {
		t.Fatal(err)
	}
	grand, _ := full.Fork(0, 0)
	if _, err := full.PutText("full-again"); err != nil {
		t.Fatal(err)
	}
	if _, err := grand.PutText("grand-after"); err != nil {
		t.Fatal(err)
	}
	checks := map[*Dialog]string{
		parent: "m0,m1,m2,m3,m4,parent-after",
		full:   "m0,m1,m2,m3,m4,full-after,full-again",
		part:   "m0,m3,m4,part-after",
		grand:  "m0,m1,m2,m3,m4,full-after,grand-after",
	}
	for d, want := range checks {
		if got := contents(d); got != want {
			t.Errorf("%s: %q, want %q", d.ID(), got, want)
		}
	}
	if grand.Node().Depth != 2 {
		t.Errorf("grandchild depth = %d, want 2", grand.Node().Depth)
	}
}

func TestForkSharesMessages(t *testing.T) {
	d := dialogOf(t, 1000)
	c, _ := d.Fork(0, 0)
	if d.At(500) != c.At(500) {
		t.Fatal("full fork copied message 500 instead of sharing it")
	}
	p, _ := d.Fork(3, 1)
	if p.At(0) != d.At(0) || p.At(1) != d.At(997) {
		t.Fatal("partial fork copied messages instead of sharing them")
	}
}

// AppendShared stores the message itself, as forks share theirs; a sink
// sees it like any append, and a nil message is refused.
func TestAppendShared(t *testing.T) {
	var f Forest
	a := dialogOf(t, 2, WithSink(&f))
	b, err := a.Fork(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	m := &Message{Role: RoleAssistant, Content: "shared"}
	for _, d := range []*Dialog{a, b} {
		if got, err := d.AppendShared(m); err != nil || got != m || d.At(d.Len()-1) != m {
			t.Fatalf("AppendShared = %p, %v; want the message itself, stored", got, err)
		}
	}
	for _, d := range []*Dialog{a, b} {
		mirrored := f.Dialog(d.ID())
		if mirrored == nil || mirrored.Len() != 3 || mirrored.At(2).Content != "shared" {
			t.Fatalf("the sink did not see the append to %s", d.ID())
		}
	}
	if _, err := a.AppendShared(nil); err == nil || a.Len() != 3 {
		t.Fatalf("AppendShared(nil) = %v, length %d", err, a.Len())
	}
}

func TestTopPromptGovernsPutText(t *testing.T) {
	add, err := NewFunction("add", "adds", func(_ context.Context, in struct{ A, B int }) (int, error) { return in.A + in.B, nil })
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPrompt("task", "Solve {task}", WithFunctions(add), WithParser(&TagParser{XMLTags: []string{"answer"}}))
	if err != nil {
		t.Fatal(err)
	}
	d := dialogOf(t, 0)
	if _, err := d.PutPrompt(p, map[string]any{"task": "2+2"}); err != nil {
		t.Fatal(err)
	}
	if d.Tail().Content != "Solve 2+2" {
		t.Fatalf("rendered %q", d.Tail().Content)
	}
	if _, err := d.PutText("more detail"); err != nil {
		t.Fatal(err)
	}
	if d.TopPrompt() != p || len(d.TopPrompt().Functions) != 1 {
		t.Fatal("PutText dropped the governing prompt and its tools")
	}
	c, _ := d.Fork(0, 0)
	if c.TopPrompt() != p {
		t.Fatal("fork did not inherit the governing prompt")
	}
	if _, err := d.PutText("free", Governed(nil)); err != nil || d.TopPrompt() != nil {
		t.Fatalf("Governed(nil) should clear the prompt, got %v %v", d.TopPrompt(), err)
	}
	if _, err := d.PutPrompt(p, nil); err == nil || !strings.Contains(err.Error(), "task") {
		t.Fatalf("missing variable error = %v", err)
	}
	if d.Len() != 3 {
		t.Fatalf("a failed PutPrompt appended a message: len %d", d.Len())
	}
}

func TestHeadTailOverviewCost(t *testing.T) {
	d := dialogOf(t, 0)
	if d.Head() != nil || d.Tail() != nil {
		t.Fatal("empty dialog has a head or tail")
	}
	d.PutText("You are a careful coder.", AsRole(RoleSystem), From("system"))
	d.PutText("line one\nline two", From("alice"))
	d.Append(Message{Role: RoleAssistant, Content: strings.Repeat("x", 200), Name: "coder", Usage: Usage{InputTokens: 10, OutputTokens: 5}, USD: 0.25})
	d.Append(Message{Role: RoleAssistant, Content: "ok", Usage: Usage{InputTokens: 1, CachedInputTokens: 1, OutputTokens: 2, ReasoningTokens: 1}, USD: 0.5})
	if d.Head().Role != RoleSystem || d.Tail().Content != "ok" {
		t.Fatal("head/tail wrong")
	}
	want := Cost{Usage: Usage{InputTokens: 11, CachedInputTokens: 1, OutputTokens: 7, ReasoningTokens: 1}, USD: 0.75}
	if got := d.Cost(); got != want {
		t.Fatalf("cost = %+v, want %+v", got, want)
	}
	c, _ := d.Fork(0, 0)
	c.Append(Message{Role: RoleAssistant, Usage: Usage{OutputTokens: 4}, USD: 1})
	if got := c.OwnCost(); got != (Cost{Usage: Usage{OutputTokens: 4}, USD: 1}) {
		t.Fatalf("own cost of a fork = %+v", got)
	}
	if got := d.OwnCost(); got != want {
		t.Fatalf("own cost of a root = %+v, want %+v", got, want)
	}
	ov := strings.Split(strings.TrimSpace(d.Overview(20)), "\n")
	wantOv := []string{
		"[0. system (system)]: You are a careful...",
		"[1. alice (user)]: line one line two",
		"[2. coder (assistant)]: xxxxxxxxxxxxxxxxx...",
		"[3. assistant (assistant)]: ok",
	}
	if !reflect.DeepEqual(ov, wantOv) {
		t.Fatalf("overview:\n%s\nwant:\n%s", strings.Join(ov, "\n"), strings.Join(wantOv, "\n"))
	}
}

func TestSanitizedName(t *testing.T) {
	m := Message{Name: "dr. strange/love" + strings.Repeat("é", 60)}
	got := m.SanitizedName()
	if len(got) != 64 || strings.ContainsAny(got, "./ é") || !strings.HasPrefix(got, "dr__strange_love") {
		t.Fatalf("SanitizedName = %q", got)
	}
}

// A tool message carries the call it answers, with its result, in
// FunctionCalls; it requests nothing, so it is not a function call.
func TestIsFunctionCallToolResult(t *testing.T) {
	fc := FunctionCall{ID: "call_1", Name: "fact", Arguments: []byte(`{}`)}
	request := &Message{Role: RoleToolCall, FunctionCalls: []FunctionCall{fc}}
	fc.Result = "42"
	result := &Message{Role: RoleTool, ToolCallID: "call_1", Content: "42", FunctionCalls: []FunctionCall{fc}}
	if !request.IsFunctionCall() {
		t.Error("a tool_call message requesting a call: IsFunctionCall is false")
	}
	if result.IsFunctionCall() {
		t.Error("a tool message answering a call: IsFunctionCall is true")
	}
	if (&Message{Role: RoleAssistant, Content: "hi"}).IsFunctionCall() {
		t.Error("a plain assistant message: IsFunctionCall is true")
	}
}

// parsedBy returns a reply to text with Parsed set as an agent sets it: the
// JSON of p's output.
func parsedBy(t *testing.T, p Parser, text string) *Message {
	t.Helper()
	v, err := p.Parse(text)
	if err != nil {
		t.Fatalf("Parse(%q): %v", text, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return &Message{Role: RoleAssistant, Content: text, Parsed: b}
}

func TestMessageTag(t *testing.T) {
	tp := &TagParser{XMLTags: []string{"answer", "why", "note"}, MDTags: []string{"python"}, SignalTags: []string{"DONE"}, Optional: []string{"note", "python"}}
	m := parsedBy(t, tp, "<answer>1</answer> <why>\n because \n</why> <answer> 2 </answer> <DONE>")
	cases := []struct {
		name, want string
		ok         bool
	}{
		{"answer", "2", true},    // the last of several, trimmed
		{"why", "because", true}, // the only one
		{"note", "", false},      // an optional tag the reply lacks
		{"python", "", false},    // a Markdown tag, not an XML one
		{"DONE", "", false},      // a signal tag
		{"other", "", false},     // a tag the parser does not look for
	}
	for _, c := range cases {
		if got, ok := m.Tag(c.name); got != c.want || ok != c.ok {
			t.Errorf("Tag(%q) = %q, %v; want %q, %v", c.name, got, ok, c.want, c.ok)
		}
	}

	empty := parsedBy(t, tp, "<answer></answer><why>x</why>")
	if got, ok := empty.Tag("answer"); got != "" || !ok {
		t.Errorf("Tag of an empty <answer></answer> = %q, %v; want \"\", true", got, ok)
	}

	// Messages that were not parsed by a TagParser have no tags.
	others := map[string]*Message{
		"unparsed":       {Role: RoleAssistant, Content: "<answer>1</answer>"},
		"empty Parsed":   {Role: RoleAssistant, Content: "<answer>1</answer>", Parsed: json.RawMessage{}},
		"JSON object":    parsedBy(t, JSONParser{}, `{"answer": "1", "xml": {"answer": ["1"]}}`),
		"JSON string":    {Role: RoleAssistant, Parsed: json.RawMessage(`"<answer>1</answer>"`)},
		"JSON null":      {Role: RoleAssistant, Parsed: json.RawMessage(`null`)},
		"malformed JSON": {Role: RoleAssistant, Parsed: json.RawMessage(`{"xml_tags":`)},
	}
	for name, m := range others {
		if got, ok := m.Tag("answer"); got != "" || ok {
			t.Errorf("%s: Tag(\"answer\") = %q, %v; want \"\", false", name, got, ok)
		}
	}
}

// Every kind of message survives a JSON round trip unchanged.
func TestMessageJSONRoundTrip(t *testing.T) {
	png := pngBytes()
	msgs := []Message{
		{Role: RoleSystem, Content: "You are {x}", Name: "system", Modality: ModalityText},
		{Role: RoleUser, Content: "hi <b>&</b>", Name: "user", Metadata: map[string]string{"k": "v"}},
		{Role: RoleUser, Name: "user", Modality: ModalityImage, Parts: []Part{{Type: PartText, Text: "a dot"}, {Type: PartImage, Image: &Image{MIME: "image/png", Data: png}}}, Metadata: map[string]string{"caption": "a dot"}},
		{Role: RoleUser, Parts: []Part{{Type: PartImage, Image: &Image{URL: "https://example.invalid/x.png"}}}},
		{Role: RoleAssistant, Name: "coder", Agent: "critic", Content: "<answer>4</answer>", Parsed: mustJSON(t, TagResult{Raw: "<answer>4</answer>", XML: map[string][]string{"answer": {"4"}}}),
			Usage: Usage{InputTokens: 100, CachedInputTokens: 20, OutputTokens: 30, ReasoningTokens: 10}, USD: 0.0012, Model: "openai/gpt-4o-mini", APIType: APICompletion,
			Logprobs: []TokenLogprob{{Token: "4", Logprob: -0.01, Bytes: []int{52}, TopLogprobs: []TokenLogprob{{Token: "5", Logprob: -4.5}}}}},
		{Role: RoleToolCall, Name: "coder", FunctionCalls: []FunctionCall{{ID: "call_1", Name: "add", Arguments: json.RawMessage(`{"a":1,"b":2}`)}}, APIType: APIResponse},
		{Role: RoleTool, Name: "add", ToolCallID: "call_1", Content: "3", FunctionCalls: []FunctionCall{{ID: "call_1", Name: "add", Arguments: json.RawMessage(`{"a":1,"b":2}`), Result: "3"}}},
		{Role: RoleTool, Name: "div", ToolCallID: "call_2", Content: "Error: divide by zero", FunctionCalls: []FunctionCall{{ID: "call_2", Name: "div", Error: "divide by zero", Result: "Error: divide by zero"}}},
		{Role: RoleAssistant, Content: "emb", Vectors: []float64{0.25, -1, 3e-9}},
	}
	for i, m := range msgs {
		back, b := roundTrip(t, m)
		if !reflect.DeepEqual(back, m) {
			t.Errorf("message %d changed in a round trip:\n got %+v\nwant %+v\njson %s", i, back, m, b)
		}
		b2, _ := json.Marshal(back)
		if string(b2) != string(b) {
			t.Errorf("message %d: JSON not stable:\n%s\n%s", i, b, b2)
		}
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCloneSharesNothing(t *testing.T) {
	m := &Message{Parts: []Part{{Type: PartImage, Image: &Image{Data: []byte{1, 2}}}}, Metadata: map[string]string{"a": "b"},
		FunctionCalls: []FunctionCall{{Arguments: json.RawMessage(`{}`)}}, Logprobs: []TokenLogprob{{Bytes: []int{1}}}, Vectors: []float64{1},
		Reasoning: []Reasoning{{Text: "t"}}}
	c := m.Clone()
	c.Reasoning[0].Text = "changed"
	c.Parts[0].Image.Data[0] = 9
	c.Metadata["a"] = "z"
	c.FunctionCalls[0].Arguments[0] = '['
	c.Logprobs[0].Bytes[0] = 7
	c.Vectors[0] = 2
	if m.Parts[0].Image.Data[0] != 1 || m.Metadata["a"] != "b" || m.FunctionCalls[0].Arguments[0] != '{' || m.Logprobs[0].Bytes[0] != 1 || m.Vectors[0] != 1 ||
		m.Reasoning[0].Text != "t" {
		t.Fatal("Clone shares memory with the original")
	}
}

func pngBytes() []byte {
	b, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
	return b
}

func TestImages(t *testing.T) {
	dir := t.TempDir()
	png := pngBytes()
	good := map[string][]byte{
		"image/png":  png,
		"image/jpeg": {0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10, 'J', 'F', 'I', 'F'},
		"image/gif":  []byte("GIF89a\x01\x00\x01\x00"),
		"image/webp": []byte("RIFF\x24\x00\x00\x00WEBPVP8 "),
	}
	for mime, data := range good {
		path := filepath.Join(dir, "img")
		os.WriteFile(path, data, 0o644)
		for _, src := range []ImageSource{ImageBytes(data), ImageFile(path), ImageBase64(base64.StdEncoding.EncodeToString(data)),
			ImageBase64("data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data))} {
			img, err := src.Load()
			if err != nil {
				t.Fatalf("%s: %v", mime, err)
			}
			if img.MIME != mime || string(img.Data) != string(data) {
				t.Fatalf("%s: got %s %x", mime, img.MIME, img.Data)
			}
		}
	}
	textFile := filepath.Join(dir, "notes.txt")
	os.WriteFile(textFile, []byte("hello world"), 0o644)
	bad := []struct {
		src  ImageSource
		want string
	}{
		{ImageFile(textFile), `image file "` + textFile + `": not a PNG, JPEG, WebP or GIF image (starts with 68 65 6c 6c 6f 20 77 6f)`},
		{ImageFile(filepath.Join(dir, "missing.png")), "missing.png"},
		{ImageBytes(nil), "empty"},
		{ImageBytes([]byte("RIFF\x24\x00\x00\x00WAVEfmt ")), "not a PNG"},
		{ImageBase64("%%%"), "not valid base64"},
		{ImageBase64("data:image/png,abc"), "data URL"},
	}
	d := dialogOf(t, 1)
	for _, b := range bad {
		_, err := d.PutImage(b.src, "caption")
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("error = %v, want it to contain %q", err, b.want)
		}
	}
	if d.Len() != 1 {
		t.Fatalf("a rejected image was appended: len %d", d.Len())
	}
	m, err := d.PutImage(ImageBytes(png), "a red dot")
	if err != nil {
		t.Fatal(err)
	}
	if m.Modality != ModalityImage || m.Metadata["caption"] != "a red dot" || m.Parts[1].Image.MIME != "image/png" || m.Text() != "a red dot" {
		t.Fatalf("image message = %+v", m)
	}
	if !strings.HasPrefix(m.Parts[1].Image.DataURL(), "data:image/png;base64,iVBOR") {
		t.Fatalf("data URL = %s", m.Parts[1].Image.DataURL())
	}
}

// failingSink refuses events after a number of them.
type failingSink struct {
	mu   sync.Mutex
	left int
}

func (s *failingSink) Emit(Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.left == 0 {
		return errors.New("disk full")
	}
	s.left--
	return nil
}

func TestSinkFailureChangesNothing(t *testing.T) {
	s := &failingSink{left: 2} // open + one message
	d := dialogOf(t, 0, WithSink(s))
	if _, err := d.PutText("kept"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.PutText("lost"); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("PutText error = %v", err)
	}
	if _, err := d.Fork(0, 0); err == nil {
		t.Fatal("Fork succeeded although the sink refused it")
	}
	if got := contents(d); got != "kept" || len(d.Node().ChildrenIDs) != 0 {
		t.Fatalf("after refused events: messages %q children %v", got, d.Node().ChildrenIDs)
	}
}

// A forest mirrored through the sink equals the live dialogs, even with
// forks and appends racing in many goroutines.
func TestForestMirrorsConcurrentForks(t *testing.T) {
	var f Forest
	root := dialogOf(t, 3, WithSink(&f))
	var live sync.Map
	live.Store(root.ID(), root)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := root.Fork(g%3, 1, WithAlias(fmt.Sprintf("g%d", g)))
			if err != nil {
				t.Error(err)
				return
			}
			live.Store(c.ID(), c)
			for i := range 5 {
				c.PutText(fmt.Sprintf("g%d-%d", g, i))
				gc, _ := c.Fork(1, 1)
				live.Store(gc.ID(), gc)
				gc.PutText("leaf")
				ggc, _ := gc.Fork(0, 0)
				live.Store(ggc.ID(), ggc)
				ggc.PutText("deep")
			}
			root.PutText(fmt.Sprintf("root-%d", g))
		}()
	}
	wg.Wait()
	n := 0
	live.Range(func(k, v any) bool {
		n++
		d := v.(*Dialog)
		r := f.Dialog(d.ID())
		if r == nil {
			t.Fatalf("dialog %s missing from the forest", d.ID())
		}
		if !reflect.DeepEqual(r.Node(), d.Node()) {
			t.Errorf("node differs:\n got %+v\nwant %+v", r.Node(), d.Node())
		}
		if !reflect.DeepEqual(r.Messages(), d.Messages()) {
			t.Errorf("messages of %s differ", d.ID())
		}
		return true
	})
	if f.Len() != n || n != 1+8*(1+2*5) {
		t.Fatalf("forest has %d dialogs, live %d", f.Len(), n)
	}
	if got := f.SubtreeIDs(root.ID()); len(got) != n || got[0] != root.ID() {
		t.Fatalf("subtree of root has %d ids", len(got))
	}
	if r := f.Roots(); len(r) != 1 || r[0] != root.ID() {
		t.Fatalf("roots = %v", r)
	}
}

func TestForestRejectsInconsistentEvents(t *testing.T) {
	var f Forest
	m := &Message{Role: RoleUser, Content: "x"}
	if err := f.Apply(Event{Kind: EventAppend, DialogID: "nope", Message: m}); err == nil {
		t.Fatal("append to unknown dialog accepted")
	}
	f.Apply(Event{Kind: EventOpen, Node: TreeNode{ID: "a", Owner: "o"}})
	if err := f.Apply(Event{Kind: EventOpen, Node: TreeNode{ID: "a", Owner: "o"}}); err == nil {
		t.Fatal("duplicate open accepted")
	}
	if err := f.Apply(Event{Kind: EventAppend, DialogID: "a", Index: 3, Message: m}); err == nil {
		t.Fatal("out-of-order append accepted")
	}
	if err := f.Apply(Event{Kind: EventFork, Node: TreeNode{ID: "b", ParentID: "a", ParentLen: 2}}); err == nil {
		t.Fatal("fork past the parent's length accepted")
	}
	if err := f.Apply(Event{Kind: EventFork, Node: TreeNode{ID: "b", ParentID: "zz"}}); err == nil {
		t.Fatal("fork of unknown parent accepted")
	}
}

// roundTrip encodes m as JSON and decodes it back, returning the message
// and its JSON.
func roundTrip(t *testing.T, m Message) (Message, []byte) {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back Message
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return back, b
}

// A dialog's JSON keeps <, > and & as the messages have them, for an
// encoder that does not escape them.
func TestDialogJSONLeavesTagsAlone(t *testing.T) {
	d, err := New("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Append(Message{Role: RoleUser, Content: "give <answer>1 & 2</answer>"}); err != nil {
		t.Fatal(err)
	}
	// As a caller that asks for it (lllm show -o json) encodes it:
	// json.Marshal itself escapes what any MarshalJSON returns.
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"give <answer>1 & 2</answer>"`) {
		t.Errorf("%s", b.String())
	}
}
