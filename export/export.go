// Package export turns the dialogs of recorded runs into training data:
// one JSON line per dialog, in the OpenAI chat fine-tuning format, the
// ShareGPT format, or lllm's own (the run log's message objects).
//
// Which dialogs a run offers is Select's business; what a dialog holds is
// its inspect.Transcript (its messages with the tool rounds of each kept
// reply); Encode writes one line. The lllm export command feeds them with
// runs, filtered runs or the samples of a sweep; see docs/export.md.
package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
)

// Format is a training-data format.
type Format string

// The formats Encode writes.
const (
	// OpenAI is the OpenAI chat fine-tuning line: {"messages": [...],
	// "tools": [...]}, with tool calls and images as the chat API takes
	// them. Every tool call has an id unique in the line, and its result
	// the same: a call the log keeps no id for (or whose id an earlier call
	// has) gets "call_N", N its position among the line's calls.
	OpenAI Format = "openai"
	// ShareGPT is {"conversations": [{"from", "value"}, ...]}, with the
	// roles system, human, gpt, function_call and observation.
	ShareGPT Format = "sharegpt"
	// LLLM is {"messages": [...], "declarations": [...], "metadata": {...}}:
	// the run log's own message objects and declarations records.
	LLLM Format = "lllm"
)

// Formats are the formats Encode writes, in the order help lists them.
var Formats = []Format{OpenAI, ShareGPT, LLLM}

// Dialog is one dialog to export: its messages, the declarations of the
// model calls behind them, and where it came from.
type Dialog struct {
	Messages     []*dialog.Message
	Declarations []*logs.Declarations
	// Metadata is written as the line's "metadata" object; nil writes none.
	Metadata *Metadata
}

// Metadata says where an exported dialog came from, in the run log's
// vocabulary. The sweep fields are set for the samples of a sweep only.
type Metadata struct {
	RunID  string `json:"run_id"`
	Dialog string `json:"dialog"` // the dialog's id
	Owner  string `json:"owner"`
	Alias  string `json:"alias,omitempty"`
	Tactic string `json:"tactic,omitempty"`
	// Status is how the run ended (run_end.status), or running or
	// interrupted for a run without a run_end.
	Status string            `json:"status"`
	Labels map[string]string `json:"labels,omitempty"`

	// Sweep is the sweep's name; Cell, Settings, Row, Repeat and Scores
	// are the sample's: its cell's hash and axis values (each axis path
	// to its value, as a sweep report has them), its row id, its repeat
	// from 0 and its scores, as its record in samples.jsonl has them.
	Sweep    string             `json:"sweep,omitempty"`
	Cell     string             `json:"cell,omitempty"`
	Settings map[string]any     `json:"settings,omitempty"`
	Row      string             `json:"row,omitempty"`
	Repeat   *int               `json:"repeat,omitempty"`
	Scores   map[string]float64 `json:"scores,omitempty"`
}

// ParseFormat returns the format named s.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return "", fmt.Errorf("unknown export format %q: want %s", s, strings.Join(names, ", "))
}

// ErrUnexportable is wrapped by the errors of a dialog that a format
// cannot hold, such as an image the log keeps neither the bytes nor the
// URL of. Such a dialog is skipped; the others can still be exported.
var ErrUnexportable = errors.New("cannot be exported")

// unexportable is an error wrapping ErrUnexportable.
func unexportable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnexportable, fmt.Sprintf(format, args...))
}

// Options are what Encode may add to a line.
type Options struct {
	// Reasoning puts each reply's reasoning text (dialog.Message
	// ReasoningText) in the line, for distillation: the assistant
	// message's "reasoning_content" in the openai format, as DeepSeek's
	// API and the chat templates of open reasoning models take it; the gpt
	// turn's value in <think></think> before the text in sharegpt. The
	// lllm format always has it.
	Reasoning bool
}

// Encode returns d in format f as one JSON line, ending in a newline.
// A dialog the format cannot hold is an error wrapping ErrUnexportable.
func Encode(f Format, d *Dialog, o Options) ([]byte, error) {
	var v any
	var err error
	switch f {
	case OpenAI:
		v, err = openAILine(d, o)
	case ShareGPT:
		v, err = shareGPTLine(d, o)
	case LLLM:
		v = lllmLine(d)
	default:
		_, err = ParseFormat(string(f))
	}
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // <answer> stays as the model wrote it
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encoding a %s line: %w", f, err)
	}
	return buf.Bytes(), nil
}
