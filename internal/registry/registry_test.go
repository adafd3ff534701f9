package registry

import (
	"errors"
	"strings"
	"testing"
)

var errUnknown = errors.New("unknown thing")

func TestLookup(t *testing.T) {
	r := New[int]("tactic", "tactics", errUnknown)
	r.MustRegister("chat", 1)
	r.MustRegister("lab:probe", 2)
	r.MustRegister("lab:research/agent", 3)
	r.MustRegister("other:research/agent", 4)
	r.MustRegister("lab:chat", 5)

	for name, want := range map[string]struct {
		v    int
		full string
	}{
		"chat":                 {1, "chat"},     // the unqualified name wins over lab:chat
		"lab:chat":             {5, "lab:chat"}, // a qualified name matches exactly
		"probe":                {2, "lab:probe"},
		"lab:probe":            {2, "lab:probe"},
		"other:research/agent": {4, "other:research/agent"},
	} {
		v, full, err := r.Lookup(name)
		if err != nil || v != want.v || full != want.full {
			t.Errorf("Lookup(%q) = %d, %q, %v; want %d, %q", name, v, full, err, want.v, want.full)
		}
	}

	for name, wants := range map[string][]string{
		"research/agent": {`tactic "research/agent" is ambiguous`, "use one of lab:research/agent, other:research/agent"},
		"prob":           {`unknown tactic "prob" (did you mean "lab:probe"?)`, "registered tactics: chat, lab:chat, lab:probe, lab:research/agent, other:research/agent"},
		"lab:prbe":       {`(did you mean "lab:probe"?)`},
		"x:probe":        {`unknown tactic "x:probe" (did you mean "lab:probe"?)`},
		"nothing-like":   {`unknown tactic "nothing-like"; registered tactics:`},
	} {
		_, _, err := r.Lookup(name)
		var nf *NotFoundError
		if !errors.As(err, &nf) || !errors.Is(err, errUnknown) {
			t.Fatalf("Lookup(%q) error %v is not a NotFoundError matching the sentinel", name, err)
		}
		for _, w := range wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Lookup(%q) = %q, want it to contain %q", name, err, w)
			}
		}
	}

	empty := New[int]("tool", "tools", nil)
	if _, _, err := empty.Lookup("calc"); err == nil || err.Error() != `unknown tool "calc": no tools are registered` || errors.Is(err, errUnknown) {
		t.Errorf("empty registry: %v", err)
	}
}

// An unlisted name is found, but an unknown name's error neither lists
// nor suggests it.
func TestUnlisted(t *testing.T) {
	r := New[int]("tactic", "tactics", nil)
	r.MustRegister("chat", 1)
	if err := r.RegisterUnlisted("conversation", 2); err != nil {
		t.Fatal(err)
	}
	if err := r.RegisterUnlisted("chat", 3); err == nil {
		t.Error("RegisterUnlisted took a name already registered")
	}
	if v, full, err := r.Lookup("conversation"); err != nil || v != 2 || full != "conversation" {
		t.Errorf("Lookup(conversation) = %d, %q, %v", v, full, err)
	}
	_, _, err := r.Lookup("conversatio")
	if err == nil || !strings.HasPrefix(err.Error(), `unknown tactic "conversatio"; registered tactics: chat (`) {
		t.Errorf("Lookup(conversatio) = %v, want chat alone listed and nothing suggested", err)
	}
	if names := r.Names(); strings.Join(names, ",") != "chat,conversation" {
		t.Errorf("Names() = %v, want every name", names)
	}
	r.Delete("conversation")
	r.MustRegister("conversation", 4)
	if _, _, err := r.Lookup("x"); err == nil || !strings.Contains(err.Error(), "registered tactics: chat, conversation (") {
		t.Errorf("a name deleted and registered again stays unlisted: %v", err)
	}
}

// A name nothing like a registered one is most likely a Go package's:
// the error says which program knows it; a typo's does not.
func TestNotFoundHintsAtPackages(t *testing.T) {
	r := New[int]("tool", "tools", nil)
	r.MustRegister("calculator", 1)
	const hint = "a Go package's tools are known only to a program that imports it"
	if _, _, err := r.Lookup("arith"); err == nil || !strings.Contains(err.Error(), hint) {
		t.Errorf("Lookup(arith) = %v, want the hint %q", err, hint)
	}
	if _, _, err := r.Lookup("calculater"); err == nil || strings.Contains(err.Error(), hint) {
		t.Errorf("Lookup(calculater) = %v, want a suggestion without the hint", err)
	}
}

func TestRegister(t *testing.T) {
	r := New[int]("tool", "tools", nil)
	for _, bad := range []string{"", ":x", "lab:", "a b", "a:b:c", "tab\tname"} {
		if err := r.Register(bad, 1); err == nil {
			t.Errorf("Register(%q) accepted a bad name", bad)
		}
	}
	if err := r.Register("calc", 1); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("calc", 2); err == nil || !strings.Contains(err.Error(), `tool "calc" is registered twice`) {
		t.Errorf("duplicate: %v", err)
	}
	if err := r.Set("calc", 3); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := r.Lookup("calc"); v != 3 {
		t.Errorf("Set did not replace: %d", v)
	}
	r.Delete("calc")
	if names := r.Names(); len(names) != 0 {
		t.Errorf("after Delete: %v", names)
	}
	defer func() {
		if recover() == nil {
			t.Error("MustRegister of a bad name did not panic")
		}
	}()
	r.MustRegister("", 1)
}
