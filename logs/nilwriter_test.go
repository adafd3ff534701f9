package logs

import (
	"errors"
	"testing"

	"github.com/lllm-go/lllm/dialog"
)

// A nil *Writer behind an interface is an error on every write, not a
// panic.
func TestNilWriter(t *testing.T) {
	var w *Writer
	var sink dialog.Sink = w
	rec := &Record{Kind: KindTacticStart, TacticStart: &TacticStart{Session: "s", Tactic: "chat"}}
	if err := w.Write(rec); !errors.Is(err, errNilWriter) {
		t.Errorf("Write = %v", err)
	}
	if err := sink.Emit(dialog.Event{}); !errors.Is(err, errNilWriter) {
		t.Errorf("Emit = %v", err)
	}
	if err := w.Finish(RunEnd{Status: StatusOK}); !errors.Is(err, errNilWriter) {
		t.Errorf("Finish = %v", err)
	}
}
