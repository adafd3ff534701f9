package logs

import "time"

// StatusUnreadable is what RunInfo says of a run whose log cannot be read.
const StatusUnreadable Status = "unreadable"

// RunInfo is a run as the tools that list runs show it (lllm runs -o json,
// the viewer's /api/runs), in the log's vocabulary: its id and directory,
// tactic, status, start and end (RFC 3339 in JSON), duration and totals
// (run_end's), the error a failed run ended with or why its log cannot be
// read, and its labels.
type RunInfo struct {
	RunID      string     `json:"run_id"`
	Dir        string     `json:"dir"`
	Tactic     string     `json:"tactic,omitempty"`
	Status     Status     `json:"status"`
	Started    *time.Time `json:"started,omitempty"`
	Ended      *time.Time `json:"ended,omitempty"`
	DurationMS *float64   `json:"duration_ms,omitempty"`
	Totals     *Totals    `json:"totals,omitempty"`
	// Error is the error a failed run ended with (run_end.error), or why
	// an unreadable run's log cannot be read.
	Error  string            `json:"error,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}

// Info is s as a RunInfo. A run whose log could not be read is
// StatusUnreadable, with the reason as its Error.
func (s Summary) Info() RunInfo {
	info := RunInfo{RunID: s.ID, Dir: s.Dir, Status: s.Status()}
	if s.Start != nil {
		info.Tactic, info.Labels = s.Start.Tactic, s.Start.Labels
	}
	if !s.Started.IsZero() {
		t := s.Started
		info.Started = &t
	}
	if s.End != nil {
		totals := s.End.Totals
		d := totals.DurationMS
		info.Totals, info.DurationMS, info.Error = &totals, &d, s.End.Error
		if !s.Ended.IsZero() {
			t := s.Ended
			info.Ended = &t
		}
	}
	if s.Err != nil {
		info.Error = s.Err.Error()
	}
	return info
}
