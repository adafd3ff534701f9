package dialog

import (
	"encoding/json"
	"testing"
)

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
