package verdict

import (
	"math"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/internal/loglin"
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
	nBuckets = 2<<subBits + (64-subBits-1)<<subBits // loglin.Buckets(subBits), as a constant for the array
)

func bucketOf(v int64) int   { return loglin.Bucket(v, subBits) }
func upperBound(i int) int64 { return loglin.Upper(i, subBits) }

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
