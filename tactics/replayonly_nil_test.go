package tactics

import (
	"fmt"
	"strings"
	"testing"
)

// RegisterReplayOnly's panic for a nil factory names it, not Register.
func TestRegisterReplayOnlyNilNamesItself(t *testing.T) {
	defer func() {
		v := recover()
		if msg := fmt.Sprint(v); !strings.HasPrefix(msg, "tactics: RegisterReplayOnly ") {
			t.Errorf("panic %q, want one naming RegisterReplayOnly", msg)
		}
	}()
	RegisterReplayOnly("nil_factory_test", nil)
}
