package render

import (
	"math"
	"time"

	"zerodrop.dev/zerodrop/internal/loglin"
)

// binHist is a small log-linear latency histogram for one timeline bucket:
// values below 32 ns have a bin each, above every power of two is split
// into 16 bins, so a bin is at most 1/16 (6.25%) of its lower bound wide.
// That is coarser than the report's histogram (0.8%, see zdv1.Latency),
// which a plot does not need, and small enough (about 4 KiB) to keep one
// per bucket while a run file is read.
type binHist struct {
	counts [binCount]uint32
	n      uint32
}

const (
	binSubBits = 4
	binCount   = 2<<binSubBits + (64-binSubBits-1)<<binSubBits // loglin.Buckets(binSubBits)
)

// BinResolution is the widest a latency bin is relative to its lower
// bound: how far above the true value a per-bucket percentile may be.
const BinResolution = 1.0 / (1 << binSubBits)

func binOf(v int64) int    { return loglin.Bucket(v, binSubBits) }
func binUpper(i int) int64 { return loglin.Upper(i, binSubBits) }

func (h *binHist) add(d time.Duration) {
	h.counts[binOf(int64(d))]++
	h.n++
}

// quantile is the upper bound of the bin holding the q-quantile, capped at
// maxNs (the exact maximum): never below the true value.
func (h *binHist) quantile(q float64, maxNs int64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := uint32(max(math.Ceil(q*float64(h.n)), 1))
	var cum uint32
	for i, c := range h.counts {
		if cum += c; cum >= rank {
			return min(binUpper(i), maxNs)
		}
	}
	return maxNs
}

// bucketLatency collects the latencies of each timeline bucket and, once
// the run file is read, gives p50, p99 and the exact max per bucket. The
// histograms exist only while the file is read, one per bucket that has
// results.
type bucketLatency struct {
	hists []*binHist
	max   []int64
}

func newBucketLatency(n int) *bucketLatency {
	return &bucketLatency{hists: make([]*binHist, n), max: make([]int64, n)}
}

func (b *bucketLatency) add(i int, d time.Duration) {
	h := b.hists[i]
	if h == nil {
		h = &binHist{}
		b.hists[i] = h
	}
	h.add(d)
	b.max[i] = max(b.max[i], int64(d))
}

// LatencySeries are per-bucket latency figures in milliseconds over every
// result sent in the bucket (failures included, so timeouts show, as the
// report's latency does). A bucket without results has Count 0.
type LatencySeries struct {
	Count               []int64
	P50Ms, P99Ms, MaxMs []float64
}

func (b *bucketLatency) series() LatencySeries {
	n := len(b.hists)
	s := LatencySeries{Count: make([]int64, n), P50Ms: make([]float64, n), P99Ms: make([]float64, n), MaxMs: make([]float64, n)}
	for i, h := range b.hists {
		if h == nil {
			continue
		}
		s.Count[i] = int64(h.n)
		s.P50Ms[i] = nsToMs(h.quantile(0.50, b.max[i]))
		s.P99Ms[i] = nsToMs(h.quantile(0.99, b.max[i]))
		s.MaxMs[i] = nsToMs(b.max[i])
	}
	return s
}

func nsToMs(ns int64) float64 { return float64(ns) / 1e6 }
