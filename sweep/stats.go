package sweep

import (
	"math"
	"slices"
	"sort"
)

// mean is the arithmetic mean of xs, 0 for none.
func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// stdErr is the standard error of the mean of xs: the sample standard
// deviation (n-1 in the denominator) over the square root of n. It is 0 for
// fewer than two values.
func stdErr(xs []float64) float64 {
	n := len(xs)
	if n < 2 {
		return 0
	}
	m := mean(xs)
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss/float64(n-1)) / math.Sqrt(float64(n))
}

// passAtK is the unbiased estimator of pass@k for one problem with n
// samples of which c pass (Chen et al. 2021): 1 - C(n-c, k) / C(n, k),
// computed as a stable product. It is 1 when n-c < k, and NaN when k > n.
func passAtK(n, c, k int) float64 {
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

// percentile is the p-th percentile (0 to 100) of xs by linear
// interpolation between closest ranks; 0 for none. xs is not changed.
func percentile(xs []float64, p float64) float64 {
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

// tQuantile is the p-quantile of Student's t distribution with df degrees
// of freedom: the t with P(T ≤ t) = p. It is exact to about 1e-12: the
// t distribution's CDF, written with the regularized incomplete beta
// function (evaluated by its continued fraction, Lentz's method), is
// inverted by bisection. tQuantile(0.975, df) is the factor of a 95%
// confidence interval (12.706 for df 1, 2.571 for 5, 2.228 for 10, 1.960
// in the limit). It is NaN for p outside [0, 1] or df not positive, and
// ∓Inf for p 0 and 1.
func tQuantile(p, df float64) float64 {
	switch {
	case math.IsNaN(p) || math.IsNaN(df) || p < 0 || p > 1 || df <= 0:
		return math.NaN()
	case p == 0:
		return math.Inf(-1)
	case p == 1:
		return math.Inf(1)
	case p == 0.5:
		return 0
	case p < 0.5:
		return -tQuantile(1-p, df)
	}
	tail := 1 - p // the wanted P(T > t), in (0, 0.5)
	lo, hi := 0.0, 1.0
	for tTail(hi, df) > tail {
		lo, hi = hi, 2*hi
		if math.IsInf(hi, 1) {
			return hi
		}
	}
	for range 200 {
		mid := lo + (hi-lo)/2
		if mid == lo || mid == hi {
			break
		}
		if tTail(mid, df) > tail {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo + (hi-lo)/2
}

// tTail is P(T > t) for t ≥ 0 and Student's t with df degrees of freedom:
// half the regularized incomplete beta I_x(df/2, 1/2) at x = df/(df+t²).
func tTail(t, df float64) float64 {
	return regIncBeta(df/2, 0.5, df/(df+t*t)) / 2
}

// regIncBeta is the regularized incomplete beta function I_x(a, b), for
// a, b > 0 and x in [0, 1].
func regIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(a*math.Log(x) + b*math.Log1p(-x) + lab - la - lb)
	// The continued fraction converges fast for x < (a+1)/(a+b+2); past
	// it, I_x(a, b) = 1 - I_{1-x}(b, a).
	if x < (a+1)/(a+b+2) {
		return front * betaFraction(a, b, x) / a
	}
	return 1 - front*betaFraction(b, a, 1-x)/b
}

// betaFraction evaluates the continued fraction of the incomplete beta
// function by the modified Lentz method.
func betaFraction(a, b, x float64) float64 {
	const tiny, eps = 1e-300, 1e-15
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= 1000; m++ {
		fm := float64(m)
		// The even step.
		num := fm * (b - fm) * x / ((a + 2*fm - 1) * (a + 2*fm))
		d = 1 + num*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + num/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		h *= d * c
		// The odd step.
		num = -(a + fm) * (a + b + fm) * x / ((a + 2*fm) * (a + 2*fm + 1))
		d = 1 + num*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + num/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		delta := d * c
		h *= delta
		if math.Abs(delta-1) < eps {
			break
		}
	}
	return h
}

// PairedDiff compares two cells paired by row: d holds, for each row both
// finished, the difference of their mean scores on it. The comparison's
// Delta is the mean of d, StdErr its standard error (see stdErr), and
// the 95% confidence interval Delta ± tQuantile(0.975, n-1)·StdErr, which
// makes the difference Significant when it excludes 0. With fewer than two
// rows there is no spread to measure: StdErr and the interval are 0 and
// the difference is not significant. d is not changed.
func PairedDiff(d []float64) Comparison {
	c := Comparison{Rows: len(d)}
	if len(d) == 0 {
		return c
	}
	s := slices.Clone(d)
	sort.Float64s(s) // the same sums whatever the order of the rows
	c.Delta = mean(s)
	if len(s) < 2 {
		return c
	}
	c.StdErr = stdErr(s)
	h := tQuantile(0.975, float64(len(s)-1)) * c.StdErr
	c.CILow, c.CIHigh = c.Delta-h, c.Delta+h
	c.Significant = c.CILow > 0 || c.CIHigh < 0
	return c
}
