// Package sweep runs benchmark sweeps: a grid of tactic configs over a
// dataset, each (cell, row, repeat) a sample that is one tactic run with a
// log of its own, scored, and aggregated into a table per cell.
//
// A Spec (YAML, see docs/sweeps.md) names the base config, the dataset,
// the axes (config paths and their values, crossed as a grid or zipped),
// repeats, scorers, concurrency and budgets. New checks all of it before
// anything runs; Sweep.Plan says what a run would do; Sweep.Run runs the
// samples that are not finished yet, with one pool of workers, per-provider
// limits that shrink on rate limits and grow back (Limiter), a cache of
// replies (Cache), and one durable record per finished sample. Re-running
// a sweep runs only what is missing; Shard splits it over processes and
// Merge joins their results; LoadReport reads the table back from disk.
//
// A sweep directory holds:
//
//	sweep.json                 the grid (Manifest)
//	samples.jsonl              finished samples, one Record per line
//	samples.shard-I-of-N.jsonl the same, per shard
//	cache.db                   replies (bbolt), also the directory's lock
//	runs/                      one run log per sample
package sweep
