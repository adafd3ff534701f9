package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ownedKeys are the request body members an adapter writes itself, which
// ExtraBody may not set: changing them would send another conversation,
// model or transport than the one the request and its digest describe.
var ownedKeys = []string{"contents", "messages", "model", "stream", "system", "systemInstruction", "tools"}

// Check reports the first problem of p that every provider would refuse:
// ExtraBody that is not a JSON object, holds a key that needs escaping,
// or sets a member the adapter owns.
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
	var es []edit
	var walk func(path []string, obj map[string]json.RawMessage) error
	walk = func(path []string, obj map[string]json.RawMessage) error {
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			if k == "" || strings.ContainsAny(k, "\"\\") || strings.IndexFunc(k, func(r rune) bool { return r < 0x20 }) >= 0 {
				return fmt.Errorf("extra_body: key %q: write keys without quotes, backslashes or control characters", k)
			}
			p := append(slices.Clip(path), k)
			if len(path) == 0 && slices.Contains(ownedKeys, k) {
				return fmt.Errorf("extra_body: %s is set by lllm-go itself and cannot be changed; extra_body is for settings such as reasoning_effort", k)
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
				if err := walk(p, sub); err != nil {
					return err
				}
				continue
			}
			if string(v) == "null" {
				v = nil
			}
			es = append(es, edit{path: p, value: v})
		}
		return nil
	}
	return es, walk(nil, top)
}
