package inspect_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	"github.com/lllm-go/lllm/inspect"
	"github.com/lllm-go/lllm/logs"
)

// An inconsistent record is placed at its line in the file, not at its
// sequence number: with a record duplicated, the two differ.
func TestInconsistentRecordNamesItsLine(t *testing.T) {
	run := agentRun(t, "You code.", standard...)
	data, err := os.ReadFile(run.Path())
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	// Line 4 is the first user message of the dialog: appended twice.
	dup := append(append(append([][]byte{}, lines[:4]...), lines[3]), lines[4:]...)
	_, err = inspect.Read(context.Background(), logs.NewReader(bytes.NewReader(bytes.Join(dup, nil)), "dup"), "dup", inspect.Options{})
	var fe *logs.FormatError
	if !errors.As(err, &fe) || fe.Line != 5 {
		t.Fatalf("got %v, want an error at line 5 (the duplicate)", err)
	}
}
