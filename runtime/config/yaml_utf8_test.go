package config

import (
	"errors"
	"strings"
	"testing"
)

// A config that is not UTF-8 is an error at the byte that is not: yaml.v3
// alone says "invalid leading UTF-8 octet", with no line.
func TestParseNotUTF8(t *testing.T) {
	data := []byte("tactic_type: chat\nagent_configs:\n  - name: assistant\n    system_prompt: caf\xe9\n")
	_, err := Parse("c.yaml", data, nil)
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("Parse = %v, want a *config.Error", err)
	}
	if ce.Line != 4 || ce.Column != 23 || !strings.Contains(err.Error(), "not UTF-8") {
		t.Errorf("error %q at line %d column %d, want line 4 column 23 saying not UTF-8", err, ce.Line, ce.Column)
	}
}
