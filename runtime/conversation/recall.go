package conversation

import (
	"math"
	"sort"
	"strings"
	"unicode"
)

// BM25 parameters of Recall.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Hit is an archive that matches a recall query.
type Hit struct {
	Archive
	Score float64 `json:"score"`
}

// Recall searches the conversation's archives for query with BM25 over
// each archive's title and summary (the title counted twice), and returns
// at most limit hits, best first; limit <= 0 means 5. Archives that share
// no term with the query are not returned.
func (c *Conversation) Recall(query string, limit int) []Hit {
	return rankArchives(c.Archives(), query, limit)
}

func rankArchives(archives []Archive, query string, limit int) []Hit {
	if limit <= 0 {
		limit = 5
	}
	q := terms(query)
	if len(q) == 0 || len(archives) == 0 {
		return nil
	}
	docs := make([]map[string]int, len(archives))
	lens := make([]int, len(archives))
	df := map[string]int{}
	total := 0
	for i, a := range archives {
		ts := terms(a.Title + " " + a.Title + " " + a.Summary)
		tf := map[string]int{}
		for _, t := range ts {
			tf[t]++
		}
		for t := range tf {
			df[t]++
		}
		docs[i], lens[i] = tf, len(ts)
		total += len(ts)
	}
	n := float64(len(archives))
	avg := float64(total) / n
	if avg == 0 {
		avg = 1
	}
	seen := map[string]bool{}
	var hits []Hit
	for i, a := range archives {
		score := 0.0
		clear(seen)
		for _, t := range q {
			if seen[t] {
				continue
			}
			seen[t] = true
			f := float64(docs[i][t])
			if f == 0 {
				continue
			}
			idf := math.Log(1 + (n-float64(df[t])+0.5)/(float64(df[t])+0.5))
			score += idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*float64(lens[i])/avg))
		}
		if score > 0 {
			hits = append(hits, Hit{Archive: a, Score: score})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].ID > hits[j].ID // newer first on a tie
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits
}

// terms splits text into case-folded words of letters and digits.
func terms(text string) []string {
	return strings.FieldsFunc(strings.Map(foldRune, text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// foldRune maps r to the smallest rune of its case-folding orbit, so that
// every case of a letter (Σ, σ and final ς; K, k and the Kelvin sign) is
// one term.
func foldRune(r rune) rune {
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	return m
}
