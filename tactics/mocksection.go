package tactics

import (
	"encoding/json"
	"errors"
	"sync"

	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/provider"
)

// mockSections holds the mock sections decoded and checked without a
// problem, by their content (as JSON, whose maps have sorted keys): the
// cells of a sweep, and runs of one config, share the same section, and
// decoding it (its keys checked strictly, then YAML) was most of the
// work of checking a cell. A section with a problem is decoded every
// time, so that the problem is placed in the config at hand.
var mockSections struct {
	sync.Mutex
	m map[string]*provider.MockConfig
}

// maxMockSections bounds mockSections: past it, the cache starts over.
const maxMockSections = 256

// mockConfig is the mock section of cfg, decoded and checked: every
// problem of the script is reported, each where it was written.
func mockConfig(cfg *config.Config) (*provider.MockConfig, error) {
	key, err := json.Marshal(cfg.Mock)
	if err == nil {
		mockSections.Lock()
		m, ok := mockSections.m[string(key)]
		mockSections.Unlock()
		if ok {
			c := *m // what a Mock reads, never changes
			return &c, nil
		}
	}
	m := new(provider.MockConfig)
	if err := cfg.DecodeSection("mock", m); err != nil {
		return nil, err
	}
	var errs []error
	for _, err := range m.Check() {
		var mp *provider.MockProblem
		if errors.As(err, &mp) {
			err = cfg.Errorf(append([]string{"mock"}, mp.Path...), "%s", err)
		}
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if key != nil {
		mockSections.Lock()
		if len(mockSections.m) >= maxMockSections || mockSections.m == nil {
			mockSections.m = map[string]*provider.MockConfig{}
		}
		c := *m
		mockSections.m[string(key)] = &c
		mockSections.Unlock()
	}
	return m, nil
}
