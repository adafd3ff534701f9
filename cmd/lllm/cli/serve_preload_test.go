package cli

import (
	"context"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"
)

// lllm serve builds the tokenizer's encoding of every agent's model when
// it starts, so that the first reply after a start does not wait for it
// (a second or two on a slow machine, where later replies take
// milliseconds).
func TestServePreloadsTokenizer(t *testing.T) {
	var (
		mu     sync.Mutex
		models []string
	)
	old := preloadTokens
	preloadTokens = func(model string) {
		mu.Lock()
		defer mu.Unlock()
		models = append(models, model)
	}
	t.Cleanup(func() { preloadTokens = old })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errb := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- Execute(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--config", "../../../configs/serve.yaml", "--data-dir", t.TempDir()}, out, errb)
	}()
	re := regexp.MustCompile(`listening on http://`)
	var preloaded []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		preloaded = slices.Clone(models)
		mu.Unlock()
		if re.MatchString(out.String()) && len(preloaded) == 2 {
			break
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exit %d: %q %q", code, out.String(), errb.String())
	}
	// configs/serve.yaml serves assistant and critic, both on mock/serve.
	if !slices.Equal(preloaded, []string{"mock/serve", "mock/serve"}) {
		t.Fatalf("preloaded %q; want each agent's model, mock/serve twice", preloaded)
	}
}
