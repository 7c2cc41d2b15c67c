// Package loglin is the bucket layout of zerodrop's log-linear latency
// histograms: every value below 2^(subBits+1) gets a bucket of its own;
// above, each power of two is split into 2^subBits buckets, so a bucket is
// at most 1/2^subBits of its lower bound wide. The verdict's histogram
// (subBits 7: 0.8 %) and the report's per-bucket plot (subBits 4: 6.25 %)
// share it, so a quantile read from either means the same thing.
package loglin

import (
	"math"
	"math/bits"
)

// Buckets is how many buckets cover 0 to math.MaxInt64 with subBits.
func Buckets(subBits uint) int {
	return 2<<subBits + (64-int(subBits)-1)<<subBits
}

// Bucket is the bucket of v (negative values fall into bucket 0).
func Bucket(v int64, subBits uint) int {
	sub := int64(1) << subBits
	linear := 2 * sub
	if v < linear {
		return int(max(v, 0))
	}
	e := bits.Len64(uint64(v)) - int(subBits+1) // >= 1
	m := v >> e                                 // in [sub, 2*sub)
	return int(linear) + (e-1)*int(sub) + int(m-sub)
}

// Upper is the largest value that falls in bucket i.
func Upper(i int, subBits uint) int64 {
	sub := 1 << subBits
	linear := 2 * sub
	if i < linear {
		return int64(i)
	}
	j := i - linear
	e := j/sub + 1
	m := uint64(j%sub + sub)
	u := (m+1)<<e - 1 // e <= 64-subBits-1, so no uint64 overflow
	if u > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(u)
}
