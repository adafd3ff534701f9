package provider

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestEditJSON(t *testing.T) {
	for _, tc := range []struct {
		doc   string
		edits []edit
		want  string
	}{
		{`{"model":"m","temperature":0}`, []edit{{path: []string{"temperature"}}}, `{"model":"m"}`},
		{`{"temperature":0,"model":"m"}`, []edit{{path: []string{"temperature"}}}, `{"model":"m"}`},
		{`{"temperature":0}`, []edit{{path: []string{"temperature"}}}, `{}`},
		{`{"model":"m"}`, []edit{{path: []string{"temperature"}, value: []byte("0.7")}}, `{"model":"m","temperature":0.7}`},
		{`{"model":"m","temperature":0}`, []edit{{path: []string{"temperature"}, value: []byte("1")}}, `{"model":"m","temperature":1}`},
		{`{}`, []edit{{path: []string{"a"}, value: []byte(`{"x":1}`)}}, `{"a":{"x":1}}`},
		{` { "options" : { "temperature" : 0 , "seed":1 } , "m" : [1,{"temperature":2}] } `,
			[]edit{{path: []string{"options", "temperature"}}},
			`{"options":{"seed":1},"m" : [1,{"temperature":2}]}`},
		{`{"m":1}`, []edit{{path: []string{"options", "temperature"}}}, `{"m":1}`},
		{`{"m":1}`, []edit{{path: []string{"options", "seed"}, value: []byte("3")}}, `{"m":1,"options":{"seed":3}}`},
		{`{"s":"a \"temperature\": 0 }","temperature":0}`, []edit{{path: []string{"temperature"}}}, `{"s":"a \"temperature\": 0 }"}`},
		{`{"seed":4,"stream_options":{"include_usage":true}}`,
			[]edit{{path: []string{"seed"}}, {path: []string{"random_seed"}, value: []byte("4")}, {path: []string{"stream_options"}}},
			`{"random_seed":4}`},
	} {
		got, err := editJSON([]byte(tc.doc), tc.edits)
		if err != nil {
			t.Errorf("editJSON(%s): %v", tc.doc, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("editJSON(%s) = %s, want %s", tc.doc, got, tc.want)
		}
	}
	for _, bad := range []string{``, `[]`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1} x`, `{"a":"`} {
		if got, err := editJSON([]byte(bad), []edit{{path: []string{"a"}}}); err == nil {
			t.Errorf("editJSON(%q) = %s, want an error", bad, got)
		}
	}
}

// FuzzEditJSON checks that editing never panics, that on valid JSON
// editInPlace gives what editJSON does, and that on valid JSON objects
// deleting and setting a key does what decoding, editing and encoding
// would.
func FuzzEditJSON(f *testing.F) {
	for _, s := range []string{`{"temperature":0,"model":"x"}`, `{"a":{"b":[1,2,{"c":"}"}]}}`, `{}`, `{"t":"\\"}`, `{"x":1e5,"y":null,"z":true}`,
		`{"model":"x","messages":[{"temperature":1}],"temperature":0}`, ` { "temperature" : -2.5E+3 } `} {
		f.Add(s, "temperature", "0.5")
	}
	f.Fuzz(func(t *testing.T, doc, key, value string) {
		var set []byte
		if json.Valid([]byte(value)) {
			set = []byte(value)
		}
		for _, e := range []edit{{path: []string{key}}, {path: []string{key}, value: set}} {
			got, err := editJSON([]byte(doc), []edit{e})
			inPlace := []byte(doc)
			got2, err2 := editInPlace(inPlace, []edit{e})
			if !json.Valid([]byte(doc)) {
				// A client's body is valid JSON: editInPlace may take an
				// invalid one for valid when it looks only at its end.
				continue
			}
			if (err == nil) != (err2 == nil) || string(got2) != string(got) {
				t.Fatalf("editInPlace(%s) = %s, %v; editJSON gave %s, %v", doc, got2, err2, got, err)
			} else if err == nil && json.Valid([]byte(doc)) && !json.Valid(inPlace) {
				t.Fatalf("editInPlace(%s) left %q, not JSON", doc, inPlace)
			}
			var want map[string]any
			if json.Unmarshal([]byte(doc), &want) != nil || err != nil || !plainKey(key) {
				continue
			}
			if e.value == nil {
				delete(want, key)
			} else {
				var v any
				json.Unmarshal(e.value, &v)
				want[key] = v
			}
			var have map[string]any
			if err := json.Unmarshal(got, &have); err != nil {
				t.Fatalf("editJSON(%s) = %s: not JSON: %v", doc, got, err)
			}
			if !reflect.DeepEqual(have, want) {
				t.Fatalf("editJSON(%s, %+v) = %s, want %v", doc, e, got, want)
			}
		}
	})
}

// TestEditInPlace checks editInPlace against editJSON: the same result,
// made in doc's memory exactly when it fits, with doc left one JSON
// document equal to the result.
func TestEditInPlace(t *testing.T) {
	del := func(k string) edit { return edit{path: []string{k}} }
	set := func(k, v string) edit { return edit{path: []string{k}, value: []byte(v)} }
	for _, tc := range []struct {
		doc     string
		edits   []edit
		inPlace bool
	}{
		{`{"model":"m","messages":[1,2],"temperature":0}`, []edit{del("temperature")}, true},
		{` {"temperature":0,"model":"m"} `, []edit{del("temperature")}, true},
		{`{"a":1,"temperature":0,"b":2}`, []edit{del("temperature")}, true},
		{`{"model":"m","temperature":0}`, []edit{set("temperature", "1")}, true},
		{`{"model":"m","temperature":0}`, []edit{set("temperature", "0.75")}, false},
		{`{"model":"m"}`, []edit{set("temperature", "1")}, false},
		{`{"seed":4,"stream_options":{"include_usage":true},"m":1}`, []edit{del("seed"), set("random_seed", "4"), del("stream_options")}, true},
		{`{"options":{"temperature":0,"seed":1},"m":1}`, []edit{{path: []string{"options", "temperature"}}}, true},
		{`{"m":1}`, []edit{del("x")}, true},
		// The last member, as langchaingo writes temperature (deleteLastNumber).
		{`{"temperature":0}`, []edit{del("temperature")}, true},
		{"{\"a\":1 ,\n \"temperature\" : -1.5e3 }\n", []edit{del("temperature")}, true},
		{`{"s":"\\","temperature":0}`, []edit{del("temperature")}, true},
		{`{"a":{"temperature":0}}`, []edit{del("temperature")}, true},
		{`{"a":[{"temperature":0}],"b":{"temperature":1}}`, []edit{del("temperature")}, true},
		{`{"s":"x,\"temperature\":0","t":1}`, []edit{del("temperature")}, true},
		{`{"a":1,"temperature":"0"}`, []edit{del("temperature")}, true},
		{`{"a":1,"xtemperature":0}`, []edit{del("temperature")}, true},
	} {
		want, err := editJSON([]byte(tc.doc), tc.edits)
		if err != nil {
			t.Fatal(err)
		}
		doc := []byte(tc.doc)
		got, err := editInPlace(doc, tc.edits)
		if err != nil {
			t.Fatalf("editInPlace(%s): %v", tc.doc, err)
		}
		if string(got) != string(want) {
			t.Errorf("editInPlace(%s) = %s, want %s", tc.doc, got, want)
		}
		obj := doc[skipSpace(doc, 0):]
		inPlace := len(got) > 0 && &got[0] == &obj[0]
		switch {
		case inPlace != tc.inPlace:
			t.Errorf("editInPlace(%s) in place = %v, want %v", tc.doc, inPlace, tc.inPlace)
		case inPlace && strings.TrimSpace(string(doc)) != string(want):
			t.Errorf("editInPlace(%s) left the document %q, want %s and spaces", tc.doc, doc, want)
		case !inPlace && string(doc) != tc.doc:
			t.Errorf("editInPlace(%s) changed the document to %s without editing in place", tc.doc, doc)
		}
	}
}

// plainKey reports whether key needs no escaping in JSON.
func plainKey(key string) bool {
	for _, c := range key {
		if c < 0x20 || c == '"' || c == '\\' || c > 0x7e {
			return false
		}
	}
	return true
}

// BenchmarkEditJSON edits a ten-message chat request as the transport
// does when no param is set: it removes temperature, the body's last
// member. "scan" is the general edit, which reads the whole body;
// "in-place" is what the transport calls, which looks at the body's end
// (each round copies the body first, as the edit changes it).
func BenchmarkEditJSON(b *testing.B) {
	var msgs []string
	for i := range 10 {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"Turn %d: %s"}`, i, strings.Repeat("some words of context ", 8)))
	}
	doc := []byte(`{"model":"gpt-4o-mini","messages":[` + strings.Join(msgs, ",") + `],"temperature":0}`)
	edits := dialectFor("openai").edits(Params{}, nil)
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := editSegments(doc, edits); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("in-place", func(b *testing.B) {
		body := make([]byte, len(doc))
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		for b.Loop() {
			copy(body, doc)
			if _, err := editInPlace(body, edits); err != nil {
				b.Fatal(err)
			}
		}
	})
}
