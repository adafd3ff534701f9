package contextmgr

import "github.com/lllm-go/lllm/internal/params"

// DecodeConfig decodes the configuration a [Factory] gets into v, a pointer
// to a struct whose json tags name the keys, as tactics.DecodeParams
// decodes a tactic's params. The "type" key is accepted and not decoded;
// fields keep their values for keys that are absent, so set the defaults
// first:
//
//	c := struct {
//		N int `json:"n"`
//	}{N: 6}
//	if err := contextmgr.DecodeConfig(cfg, &c); err != nil {
//		return nil, err
//	}
//
// A key v has no field for is an error naming it and the accepted ones,
// suggesting the closest; a value of the wrong type is one naming the key
// and the type it wants. Whole numbers written as 2.0 decode into integer
// fields; a time.Duration field reads text such as "90s" or "10m", or a
// number of seconds. Bounds are the factory's to check; it names the key
// out of bounds with a [ConfigError] whose Key is set. A manager that takes
// no keys but type refuses others with DecodeConfig(cfg, &struct{}{}).
//
// A factory that returns the error, wrapped or not, has [New] name the key
// at fault in its [ConfigError]'s Key, so that a config reports it at the
// line (or the --set) that gave it.
func DecodeConfig(cfg map[string]any, v any) error {
	return params.Decode(cfg, v, params.Options{Caller: "contextmgr: DecodeConfig", Noun: "key", Plural: "keys", Skip: []string{"type"}})
}
