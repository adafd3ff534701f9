package tactics

import (
	"context"
	"errors"
	"maps"
	"sync"

	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
)

// BatchOptions adjust Batch.
type BatchOptions struct {
	RunOptions
	// Concurrency is how many runs go at once; 0 or less means 4.
	Concurrency int
	// KeepGoing runs every task whatever happens to the others. By
	// default Batch fails fast: once a run fails, the runs in flight are
	// cancelled (their logs end as cancelled) and the tasks not yet
	// started are not run.
	KeepGoing bool
	// Labels, when set, are each task's labels, by its index in tasks,
	// recorded in its run's log over RunOptions.Labels.
	Labels []map[string]string
	// Progress, if set, is called after each task ends with the number of
	// tasks done, the total and the Result of the one that just ended.
	// Calls are serialized.
	Progress func(done, total int, last *Result)
}

// DefaultConcurrency is the Concurrency of a Batch that sets none.
const DefaultConcurrency = 4

// NotStarted is the Error of the Result of a task that a batch never ran,
// because an earlier run failed (fail-fast) or the batch was cancelled.
const NotStarted = "not started: the batch was cancelled"

// Check builds cfg's tactic and agents as Run would, without running
// anything: it returns the *ConfigError Run would return, or nil.
func Check(ctx context.Context, cfg *config.Config, opts RunOptions) error {
	_, err := prepare(ctx, cfg, opts, newPromptSource(cfg, opts))
	return err
}

// Batch runs cfg's tactic on each task, each in its own run with its own
// log, at most opts.Concurrency at a time. The results are in the order of
// tasks, one for each, never nil; a task that never ran has status
// cancelled, no RunID and the Error NotStarted. A config problem is
// returned, as a *ConfigError, before anything runs. Failed and cancelled
// runs are reported in the results, not as an error; the error is non-nil
// only for a config problem or when a run could not be logged (the
// results are then still complete).
func Batch(ctx context.Context, cfg *config.Config, tasks []string, opts BatchOptions) ([]*Result, error) {
	if err := Check(ctx, cfg, opts.RunOptions); err != nil {
		return nil, err
	}
	n := opts.Concurrency
	if n <= 0 {
		n = DefaultConcurrency
	}
	n = min(n, max(len(tasks), 1))

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	results := make([]*Result, len(tasks))
	var (
		mu      sync.Mutex // guards done, errs and calls of opts.Progress
		done    int
		errs    []error
		next    = make(chan int)
		workers sync.WaitGroup
	)
	finish := func(i int, res *Result, err error) {
		results[i] = res
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, err)
		}
		if res.Status == logs.StatusFailed && !opts.KeepGoing {
			cancel()
		}
		done++
		if opts.Progress != nil {
			opts.Progress(done, len(tasks), res)
		}
	}
	for range n {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for i := range next {
				if ctx.Err() != nil {
					finish(i, &Result{Status: logs.StatusCancelled, Error: NotStarted}, nil)
					continue
				}
				ropts := opts.RunOptions
				if i < len(opts.Labels) && len(opts.Labels[i]) > 0 {
					ropts.Labels = maps.Clone(ropts.Labels)
					if ropts.Labels == nil {
						ropts.Labels = map[string]string{}
					}
					maps.Copy(ropts.Labels, opts.Labels[i])
				}
				res, err := Run(ctx, cfg, tasks[i], ropts)
				if res == nil {
					// The run could not start: its log could not be
					// created. Count it as failed.
					msg := "the run did not start"
					if err != nil {
						msg = err.Error()
					}
					res = &Result{Status: logs.StatusFailed, Error: msg}
				}
				finish(i, res, err)
			}
		}()
	}
	for i := range tasks {
		next <- i
	}
	close(next)
	workers.Wait()

	var ce *ConfigError
	for _, err := range errs {
		if errors.As(err, &ce) {
			return results, ce
		}
	}
	return results, errors.Join(errs...)
}
