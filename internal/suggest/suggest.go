// Package suggest finds the likely intended name behind a typo, for the
// "did you mean" part of error messages.
package suggest

import "unicode/utf8"

// Closest returns the candidate nearest to s by edit distance, if it is
// close enough to be a likely typo: at most max(2, len(s)/3) edits away,
// and fewer edits than the candidate has runes.
func Closest(s string, candidates []string) (string, bool) {
	n := utf8.RuneCountInString(s)
	if n > 64 {
		return "", false
	}
	best, bestD := "", -1
	for _, c := range candidates {
		if d := Distance(s, c); bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 || bestD > max(2, n/3) || bestD >= utf8.RuneCountInString(best) {
		return "", false
	}
	return best, true
}

// Distance is the Levenshtein distance between a and b, in runes.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
