package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ownedKeys are the request body members an adapter writes itself, which
// ExtraBody may not set: changing them would send another conversation,
// model or transport than the one the request and its digest describe.
var ownedKeys = []string{"contents", "messages", "model", "stream", "system", "systemInstruction", "tools"}

// Check reports the problems of p that every provider would refuse:
// ExtraBody that is not a JSON object, or, each an *ExtraBodyError, a key
// that needs escaping or one that sets a member the adapter owns.
func (p Params) Check() error {
	_, err := extraEdits(p.ExtraBody)
	return err
}

// CheckFor is Check, and what model ("provider/model") cannot take of p:
// extra_body on a Bedrock model that is not Anthropic's, whose request
// body lllm-go does not edit.
func (p Params) CheckFor(model string) error {
	if err := p.Check(); err != nil {
		return err
	}
	name, id, _ := strings.Cut(model, "/")
	if len(p.ExtraBody) > 0 && strings.EqualFold(strings.TrimSpace(name), "bedrock") && !bedrockEditable(id) {
		return errBedrockExtraBody(id)
	}
	return nil
}

// errBedrockExtraBody says that model, on Bedrock, takes no extra_body.
func errBedrockExtraBody(model string) error {
	return fmt.Errorf("extra_body reaches only Anthropic models on bedrock; %s is sent as langchaingo builds it: remove extra_body", model)
}

// ExtraBodyError is a problem with the member of ExtraBody at Path (its
// keys, from the top).
type ExtraBodyError struct {
	Path []string
	Err  error
}

func (e *ExtraBodyError) Error() string {
	var b strings.Builder
	b.WriteString("extra_body: ")
	for i, k := range e.Path {
		if i > 0 {
			b.WriteByte('.')
		}
		if k == "" || strings.ContainsFunc(k, func(r rune) bool { return r <= ' ' || r == '"' || r == '\\' || r == '.' }) {
			k = strconv.Quote(k)
		}
		b.WriteString(k)
	}
	return b.String() + ": " + e.Err.Error()
}

func (e *ExtraBodyError) Unwrap() error { return e.Err }

// extraEdits flattens an ExtraBody object into body edits, one per leaf:
// an object merges into the body's member of its name, any other value
// replaces it, and null deletes it.
func extraEdits(body json.RawMessage) ([]edit, error) {
	if len(body) == 0 {
		return nil, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, errors.New("extra_body must be a map of request fields, such as {reasoning_effort: low}")
	}
	var (
		es   []edit
		errs []error
	)
	var walk func(path []string, obj map[string]json.RawMessage)
	walk = func(path []string, obj map[string]json.RawMessage) {
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			p := append(slices.Clip(path), k)
			if k == "" || strings.ContainsAny(k, "\"\\") || strings.IndexFunc(k, func(r rune) bool { return r < 0x20 }) >= 0 {
				errs = append(errs, &ExtraBodyError{p, errors.New("write keys without quotes, backslashes or control characters")})
				continue
			}
			if len(path) == 0 && slices.Contains(ownedKeys, k) {
				errs = append(errs, &ExtraBodyError{p, errors.New("lllm-go sets this member itself and it cannot be changed; extra_body is for settings such as reasoning_effort")})
				continue
			}
			v := bytes.TrimSpace(obj[k])
			var sub map[string]json.RawMessage
			if len(v) > 0 && v[0] == '{' && json.Unmarshal(v, &sub) == nil {
				if len(sub) == 0 {
					// Merged, it adds nothing to an object there, and
					// makes one where there is none.
					es = append(es, edit{path: p, value: []byte("{}"), merge: true})
					continue
				}
				walk(p, sub)
				continue
			}
			if string(v) == "null" {
				v = nil
			}
			es = append(es, edit{path: p, value: v})
		}
	}
	walk(nil, top)
	return es, errors.Join(errs...)
}
