package dialog

import (
	"encoding/json"
	"testing"
)

func TestHandlerDefaults(t *testing.T) {
	fn := mustAddFunction(t)
	parser := &TagParser{XMLTags: []string{"answer"}}
	format := json.RawMessage(`{"type":"object"}`)
	p := MustPrompt("research/solver", "Solve {task}", WithFunctions(fn), WithParser(parser),
		WithFormat(format), WithMetadata(map[string]string{"k": "v"}))

	tests := []struct {
		name      string
		got       *Prompt
		path      string
		render    map[string]any
		want      string
		keepTools bool
	}{
		{"exception", p.ExceptionPrompt(), "research/solver#on_exception",
			map[string]any{"error_message": "missing <answer>"}, "Error: missing <answer>. Please fix.", true},
		{"interrupt", p.InterruptPrompt(), "research/solver#on_interrupt",
			map[string]any{"call_results": "r1\nr2"}, "r1\nr2", true},
		{"interrupt final", p.InterruptFinalPrompt(), "research/solver#on_interrupt_final",
			nil, "You are reaching the limit of tool calls. Provide the final response.", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.got
			if d.Path != tt.path {
				t.Errorf("Path = %q, want %q", d.Path, tt.path)
			}
			if tt.keepTools != (len(d.Functions) == 1 && d.Functions[0] == fn) {
				t.Errorf("Functions = %v, keep tools = %v", d.Functions, tt.keepTools)
			}
			if d.Parser != Parser(parser) || string(d.Format) != string(format) {
				t.Errorf("parser or format not kept: %v %s", d.Parser, d.Format)
			}
			if d.Metadata != nil {
				t.Errorf("Metadata = %v, want none", d.Metadata)
			}
			got, err := d.Render(tt.render)
			if err != nil || got != tt.want {
				t.Errorf("Render = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if len(p.Functions) != 1 {
		t.Error("deriving changed the original prompt")
	}
	// Derived once: the same pointer every time.
	if e1, e2 := p.ExceptionPrompt(), p.ExceptionPrompt(); e1 != e2 {
		t.Error("the exception prompt is derived on every call")
	}
	if f1, f2 := p.InterruptFinalPrompt(), p.InterruptFinalPrompt(); f1 != f2 {
		t.Error("the final prompt is derived on every call")
	}
	// Derived prompts have handlers of their own.
	if got := p.InterruptFinalPrompt().ExceptionPrompt(); len(got.Functions) != 0 ||
		got.Path != "research/solver#on_interrupt_final#on_exception" {
		t.Errorf("exception prompt of final prompt = %q with %d tools", got.Path, len(got.Functions))
	}
}

func TestHandlerCustom(t *testing.T) {
	custom := MustPrompt("custom/exc", "Oops: {error_message}")
	final := MustPrompt("custom/final", "Stop now.")
	p := MustPrompt("p", "x", WithHandler(Handler{OnException: custom, OnInterruptFinal: final}))
	if p.ExceptionPrompt() != custom || p.InterruptFinalPrompt() != final {
		t.Error("custom handler prompts not returned")
	}
	if got := p.InterruptPrompt(); got.Path != "p#on_interrupt" || got.Template != "{call_results}" {
		t.Errorf("default interrupt prompt = %q %q", got.Path, got.Template)
	}
	// Default prompts inherit the handler, so custom follow-ups keep applying.
	if p.InterruptPrompt().ExceptionPrompt() != custom {
		t.Error("derived prompt lost the custom handler")
	}
}

func TestHandlerLiteralPrompt(t *testing.T) {
	// A prompt not built by NewPrompt, or a value copy, derives correctly
	// (uncached) and never sees another prompt's cached handlers.
	fn := mustAddFunction(t)
	p := MustPrompt("p", "x", WithFunctions(fn))
	_ = p.ExceptionPrompt() // fill the cache
	c := *p
	c.Functions = nil
	if got := c.ExceptionPrompt(); len(got.Functions) != 0 {
		t.Error("value copy served the original's cached handler prompt")
	}
	lit := &Prompt{Path: "lit", Functions: []*Function{fn}}
	if got := lit.InterruptPrompt(); got.Path != "lit#on_interrupt" || len(got.Functions) != 1 {
		t.Errorf("literal InterruptPrompt = %+v", got)
	}
	var nilp *Prompt
	if nilp.ExceptionPrompt() != nil || nilp.InterruptPrompt() != nil || nilp.InterruptFinalPrompt() != nil || nilp.WithoutTools() != nil {
		t.Error("nil prompt derived a non-nil prompt")
	}
}
