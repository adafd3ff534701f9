package sweep

import (
	"math"
	"slices"
	"sort"
)

// Mean is the arithmetic mean of xs, 0 for none.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// StdErr is the standard error of the mean of xs: the sample standard
// deviation (n-1 in the denominator) over the square root of n. It is 0 for
// fewer than two values.
func StdErr(xs []float64) float64 {
	n := len(xs)
	if n < 2 {
		return 0
	}
	m := Mean(xs)
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss/float64(n-1)) / math.Sqrt(float64(n))
}

// PassAtK is the unbiased estimator of pass@k for one problem with n
// samples of which c pass (Chen et al. 2021): 1 - C(n-c, k) / C(n, k),
// computed as a stable product. It is 1 when n-c < k, and NaN when k > n.
func PassAtK(n, c, k int) float64 {
	if k > n || k < 1 {
		return math.NaN()
	}
	if n-c < k {
		return 1
	}
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return 1 - p
}

// Percentile is the p-th percentile (0 to 100) of xs by linear
// interpolation between closest ranks; 0 for none. xs is not changed.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if len(s) == 1 {
		return s[0]
	}
	r := p / 100 * float64(len(s)-1)
	lo := int(math.Floor(r))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (r-float64(lo))*(s[hi]-s[lo])
}
