package logs

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
)

func TestDeclarationsOf(t *testing.T) {
	if d := DeclarationsOf(nil, nil); d != nil {
		t.Fatalf("no tools and no format: %+v, want nil", d)
	}
	search := &dialog.Function{Name: "search", Description: "Searches.", Parameters: json.RawMessage(`{"type":"object"}`), Required: []string{"q"}}
	format := json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}}}`)
	d := DeclarationsOf([]*dialog.Function{search, nil}, format)
	if len(d.Tools) != 1 || d.Tools[0].Name != "search" || d.Tools[0].Required[0] != "q" || string(d.Format) != string(format) {
		t.Fatalf("declarations %+v", d)
	}
	if !strings.HasPrefix(d.Digest, "sha256:") || len(d.Digest) != len("sha256:")+64 {
		t.Fatalf("digest %q", d.Digest)
	}
	// The digest names the content: equal sets, equal digests; any
	// change, another.
	same := *search
	if DeclarationsOf([]*dialog.Function{&same}, format).Digest != d.Digest {
		t.Error("equal declarations have different digests")
	}
	other := *search
	other.Description = "Searches the web."
	for name, e := range map[string]*Declarations{
		"description": DeclarationsOf([]*dialog.Function{&other}, format),
		"format":      DeclarationsOf([]*dialog.Function{search}, nil),
		"tools":       DeclarationsOf(nil, format),
	} {
		if e.Digest == d.Digest {
			t.Errorf("a change of %s keeps the digest", name)
		}
	}
	// A schema that is not JSON is kept as a string of its text, so the
	// record still encodes.
	bad := &dialog.Function{Name: "bad", Parameters: json.RawMessage(`{not json`)}
	d = DeclarationsOf([]*dialog.Function{bad}, nil)
	if string(d.Tools[0].Parameters) != `"{not json"` {
		t.Errorf("invalid schema kept as %s", d.Tools[0].Parameters)
	}
	if _, err := encodeRecord(nil, &Record{Kind: KindDeclarations, Declarations: d}); err != nil {
		t.Errorf("encoding: %v", err)
	}
}

// A Writer writes each set of declarations once, whoever sends it again,
// and a reader reads it back.
func TestWriterWritesDeclarationsOnce(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, RunStart{Tactic: "t"}, Options{FlushDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	fn := &dialog.Function{Name: "f", Parameters: json.RawMessage(`{"type":"object"}`)}
	a := DeclarationsOf([]*dialog.Function{fn}, nil)
	b := DeclarationsOf(nil, json.RawMessage(`{"type":"string"}`))
	for _, d := range []*Declarations{a, a, b, DeclarationsOf([]*dialog.Function{fn}, nil)} {
		if err := w.Write(&Record{Kind: KindDeclarations, Declarations: d}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Write(&Record{Kind: KindDeclarations, Declarations: &Declarations{}}); err == nil {
		t.Error("a declarations record without a digest was accepted")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rd := NewReader(bytes.NewReader(buf.Bytes()), "run")
	var got []string
	for {
		rec, err := rd.Next()
		if err != nil {
			break
		}
		if rec.Kind == KindDeclarations {
			got = append(got, rec.Declarations.Digest)
			if rec.Declarations.Digest == a.Digest && (len(rec.Declarations.Tools) != 1 || rec.Declarations.Tools[0].Name != "f") {
				t.Errorf("read back %+v", rec.Declarations)
			}
		}
	}
	if len(got) != 2 || got[0] != a.Digest || got[1] != b.Digest {
		t.Errorf("declarations written: %v, want %s then %s, once each", got, a.Digest, b.Digest)
	}
	if len(rd.Warnings()) != 0 {
		t.Errorf("warnings: %v", rd.Warnings())
	}
}
