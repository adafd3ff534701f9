package dialog

import (
	"errors"
	"strings"
	"testing"
)

// A brace around text that is no variable quotes at most about 40
// characters of it, whatever the length of its line; bytes that are not
// UTF-8 stay escaped.
func TestTemplateErrorQuotesShort(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"x {not a var} y", `"{not a var}" is not a variable`},
		{"{" + strings.Repeat("long words ", 10000) + "}", `"{` + strings.Repeat("long words ", 4)[:37] + `…}" is not a variable`},
		{"{\xff" + strings.Repeat("é", 100) + "}", `"{\xff` + strings.Repeat("é", 36) + `…}" is not a variable`},
	} {
		_, err := NewPrompt("p", tc.src)
		var te *TemplateError
		if !errors.As(err, &te) || !strings.HasPrefix(te.Msg, tc.want) || len(te.Msg) > 300 {
			t.Errorf("NewPrompt(%.30q...): %v, want a TemplateError starting %s", tc.src, err, tc.want)
		}
	}
}

// A template without variables renders to its text, escapes resolved,
// however its literal text is split by the escapes.
func TestRenderNoVariables(t *testing.T) {
	for src, want := range map[string]string{
		"":                "",
		"plain":           "plain",
		"{{a}} and }}{{ ": "{a} and }{ ",
		"{{":              "{",
	} {
		p, err := NewPrompt("p", src)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := p.Render(nil); err != nil || got != want {
			t.Errorf("Render of %q = %q, %v; want %q", src, got, err, want)
		}
	}
}
