package tactics

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider"
)

// held is a model whose first call waits for release.
type held struct {
	started, release chan struct{}
	n                int
}

func (h *held) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	if h.n++; h.n == 1 {
		close(h.started)
		<-h.release
	}
	last := req.Messages[len(req.Messages)-1].Text()
	return &provider.Response{Message: dialog.Message{Role: dialog.RoleAssistant, Content: "reply to: " + last}}, nil
}

// A message received into a dialog while a Respond answers it would land
// before the reply, which never saw it: the transcript would show the
// model answering a message it was not sent. It is refused, as a second
// Respond is; another alias still takes messages.
func TestReceiveWhileAnswering(t *testing.T) {
	m := &held{started: make(chan struct{}), release: make(chan struct{})}
	a, _ := newAgent(t, m, nil)
	if err := a.Fork("main", "side", 0, 0, false); err != nil {
		t.Fatal(err)
	}
	a.Receive("first")
	done := make(chan error)
	go func() {
		_, _, err := a.Respond(context.Background())
		done <- err
	}()
	<-m.started
	p := dialog.MustPrompt("late", "late prompt")
	for name, err := range map[string]error{
		"Receive":       a.Receive("second"),
		"ReceivePrompt": a.ReceivePrompt(p, nil),
	} {
		if err == nil || !strings.Contains(err.Error(), "is being answered") {
			t.Errorf("%s while answering: err = %v", name, err)
		}
	}
	close(m.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	d, _ := a.Dialog("")
	if got := d.Messages(); len(got) != 2 || got[1].Text() != "reply to: first" {
		t.Fatalf("dialog = %d messages, last %q", len(got), got[len(got)-1].Text())
	}
	if err := a.Receive("second"); err != nil {
		t.Fatalf("Receive after the Respond: %v", err)
	}
	if err := a.Switch("side"); err != nil {
		t.Fatal(err)
	}
	if err := a.Receive("to the side"); err != nil {
		t.Fatalf("Receive into another alias: %v", err)
	}
}

// echo answers with the text of the last message.
type echo struct{}

func (echo) Generate(_ context.Context, req *provider.Request) (*provider.Response, error) {
	return &provider.Response{Message: dialog.Message{Role: dialog.RoleAssistant, Content: "re: " + req.Messages[len(req.Messages)-1].Text()}}, nil
}

// Goroutines feeding and answering their own dialog of one agent, with
// ReceiveTo and RespondTo, never post into each other's dialogs, as
// Switch then Receive could.
func TestReceiveToFromGoroutines(t *testing.T) {
	a, _ := newAgent(t, echo{}, nil)
	aliases := []string{"x", "y"}
	for _, alias := range aliases {
		if err := a.Fork("main", alias, 0, 0, false); err != nil {
			t.Fatal(err)
		}
	}
	const rounds = 50
	errs := make(chan error, len(aliases))
	for _, alias := range aliases {
		go func() {
			for i := range rounds {
				if err := a.ReceiveTo(alias, fmt.Sprintf("for %s %d", alias, i)); err != nil {
					errs <- err
					return
				}
				if _, _, err := a.RespondTo(context.Background(), alias); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range aliases {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, alias := range aliases {
		d, _ := a.Dialog(alias)
		msgs := d.Messages()
		if len(msgs) != 2*rounds {
			t.Fatalf("dialog %s: %d messages, want %d", alias, len(msgs), 2*rounds)
		}
		for _, m := range msgs {
			if m.Role == dialog.RoleUser && !strings.Contains(m.Text(), "for "+alias+" ") {
				t.Fatalf("dialog %s holds %q", alias, m.Text())
			}
		}
	}
	if err := a.ReceiveTo("nope", "x"); err == nil || !strings.Contains(err.Error(), `no dialog "nope"`) {
		t.Errorf("ReceiveTo an unknown alias: %v", err)
	}
}
