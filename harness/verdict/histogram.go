package verdict

import (
	"math"
	"math/bits"
	"time"

	zdv1 "zerodrop/apis/v1"
)

// histogram is a fixed-size log-linear latency histogram (about 58 KiB)
// covering 0 ns to the largest time.Duration. Values below 256 ns have a
// bucket each; above, every power of two is split into 128 buckets, so a
// bucket is at most 1/128 (0.78%) of its lower bound wide. Quantiles report
// the bucket's upper bound, capped at the exact maximum: never below the
// true value and at most 0.8% above it.
type histogram struct {
	counts [nBuckets]uint64
	n      uint64
	sum    float64 // ns, for the exact mean
	max    int64
}

const (
	subBits  = 7
	sub      = 1 << subBits // buckets per power of two
	linear   = 2 * sub      // values below this get one bucket each
	nBuckets = linear + (64-subBits-1)*sub
)

func bucketOf(v int64) int {
	if v < linear {
		if v < 0 {
			return 0
		}
		return int(v)
	}
	e := bits.Len64(uint64(v)) - (subBits + 1) // >= 1
	m := v >> e                                // in [sub, 2*sub)
	return linear + (e-1)*sub + int(m-sub)
}

// upperBound is the largest value that falls in bucket i.
func upperBound(i int) int64 {
	if i < linear {
		return int64(i)
	}
	j := i - linear
	e := j/sub + 1
	m := int64(j%sub + sub)
	u := uint64(m+1)<<e - 1 // e <= 55, so no uint64 overflow
	if u > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(u)
}

func (h *histogram) add(d time.Duration) {
	v := int64(d)
	if v < 0 {
		v = 0
	}
	h.counts[bucketOf(v)]++
	h.n++
	h.sum += float64(v)
	if v > h.max {
		h.max = v
	}
}

// quantile returns the q-quantile (0 < q <= 1) in ns: the smallest bucket
// bound with at least ceil(q*n) values at or below it.
func (h *histogram) quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	var cum uint64
	for i, c := range h.counts {
		cum += c
		if cum >= rank {
			return min(upperBound(i), h.max)
		}
	}
	return h.max
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

func (h *histogram) summary() zdv1.Latency {
	if h.n == 0 {
		return zdv1.Latency{}
	}
	return zdv1.Latency{
		Count:  int64(h.n),
		P50Ms:  ms(h.quantile(0.50)),
		P90Ms:  ms(h.quantile(0.90)),
		P99Ms:  ms(h.quantile(0.99)),
		MaxMs:  ms(h.max),
		MeanMs: h.sum / float64(h.n) / 1e6,
	}
}
