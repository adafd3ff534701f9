package cli

import (
	"os"
	"strings"
	"testing"
)

// TestChatSenderNamedLikeAnAgent: lllm chat refuses a --sender that is the
// name of one of the server's agents before sending anything.
func TestChatSenderNamedLikeAnAgent(t *testing.T) {
	srv, _, data := cmdServer(t, "../../../configs/serve.yaml")
	addr := addrOf(srv)
	code, out, errs := chatRun(t, "hello\n", "assistant", "--sender", "critic", "--addr", addr)
	if code != ExitError || !strings.Contains(errs, "--sender critic is the name of an agent of the server at "+addr) {
		t.Errorf("exit %d, want a refusal of the sender:\n%s\n%s", code, out, errs)
	}
	ents, _ := os.ReadDir(data)
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") { // the server's lock
			t.Errorf("the refused chat stored %s", e.Name())
		}
	}
}
