// Package sweep runs benchmark sweeps: a grid of tactic configs over a
// dataset, each (cell, row, repeat) a sample that is one tactic run with a
// log of its own, scored, and aggregated into a table per cell.
//
// A Spec (YAML, see docs/sweeps.md) names the base config, the dataset,
// the axes (config paths and their values, crossed as a grid or zipped),
// repeats, scorers, concurrency and budgets. New checks all of it before
// anything runs; Sweep.Plan says what a run would do; Sweep.Run runs the
// samples that are not finished yet, with one pool of workers, per-provider
// limits that shrink on rate limits and grow back, a cache of replies,
// and one durable record per finished sample. Re-running a sweep runs
// only what is missing; Shard splits it over processes and Merge joins
// their results; LoadReport reads the table back from disk.
//
// A sample whose record succeeded, for its row as the row is now, and
// lacks only scores (a scorer was added, or a scorer's params changed) is
// re-scored instead of run: the tactic's result is read from the last
// record of its run log (run_end), the answer from its record, and only
// the missing or stale scorers run, on the same Sample a run would give
// them (Result is the JSON the run log holds). The new record, a copy of
// the old one with the new scores and the scorers' own calls, is appended
// to the run's (or shard's) samples file and stands for the sample. A
// sample whose run log is gone, unreadable or without a run_end runs
// again instead; one whose re-scoring fails on a scorer's model call (a
// judge's) keeps its old record, and the next run re-scores it.
// Report.Rescored and Plan.ToRescore count them; see docs/sweeps.md.
//
// A sweep directory holds:
//
//	sweep.json                 the grid (Manifest)
//	samples.jsonl              finished samples, one Record per line (and one per re-score)
//	samples.shard-I-of-N.jsonl the same, per shard
//	cache.db                   replies (bbolt), also the directory's lock
//	runs/                      one run log per sample
package sweep
