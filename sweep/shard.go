package sweep

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Shard is a deterministic share of a sweep's samples: the samples whose
// key hashes to Index modulo Count. The zero value is the whole sweep.
type Shard struct {
	Index, Count int
}

// ParseShard reads "I/N", with I from 0 to N-1.
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want I/N, such as 0/4 (I from 0 to N-1)", s)
	}
	idx, err1 := strconv.Atoi(strings.TrimSpace(i))
	cnt, err2 := strconv.Atoi(strings.TrimSpace(n))
	if err1 != nil || err2 != nil || cnt < 1 || idx < 0 || idx >= cnt {
		return Shard{}, fmt.Errorf("shard %q: want I/N with N at least 1 and I from 0 to N-1", s)
	}
	return Shard{idx, cnt}, nil
}

// String is "I/N", or "" for the whole sweep.
func (s Shard) String() string {
	if s.Count <= 1 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Has says whether the sample (cell, row, repeat) is in the shard.
func (s Shard) Has(cell, row string, repeat int) bool {
	if s.Count <= 1 {
		return true
	}
	h := fnv.New64a()
	h.Write([]byte(sampleKey(cell, row, repeat)))
	return h.Sum64()%uint64(s.Count) == uint64(s.Index)
}

// lockFile is the sweep directory's lock (see lockRun).
const lockFile = ".lock"

// suffix names the shard's files: "" or ".shard-I-of-N".
func (s Shard) suffix() string {
	if s.Count <= 1 {
		return ""
	}
	return fmt.Sprintf(".shard-%d-of-%d", s.Index, s.Count)
}
