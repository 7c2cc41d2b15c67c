package verdict

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketBounds(t *testing.T) {
	// Every value lies in a bucket whose upper bound is >= the value and
	// within 1/128 of it; bucket indexes are monotonic.
	prev := -1
	for _, v := range []int64{0, 1, 255, 256, 257, 511, 512, 1000, 1 << 20, 123456789, 1 << 40, math.MaxInt64 / 3, math.MaxInt64} {
		i := bucketOf(v)
		if i < prev || i >= nBuckets {
			t.Fatalf("bucketOf(%d) = %d (prev %d, n %d)", v, i, prev, nBuckets)
		}
		prev = i
		ub := upperBound(i)
		if ub < v {
			t.Errorf("upperBound(bucketOf(%d)) = %d < value", v, ub)
		}
		if v > 0 && float64(ub-v)/float64(v) > 1.0/128 {
			t.Errorf("value %d: bound %d is %.3f%% above", v, ub, 100*float64(ub-v)/float64(v))
		}
		if i > 0 && upperBound(i-1) >= v {
			t.Errorf("value %d also fits the previous bucket (bound %d)", v, upperBound(i-1))
		}
	}
}

func TestQuantileAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h histogram
	vals := make([]int64, 100_000)
	for i := range vals {
		// log-uniform from 10 µs to 10 s, like real latencies with a tail
		v := int64(math.Exp(rng.Float64()*math.Log(1e6)) * 1e4)
		vals[i] = v
		h.add(time.Duration(v))
	}
	slices.Sort(vals)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		exact := vals[int(math.Ceil(q*float64(len(vals))))-1]
		got := h.quantile(q)
		if got < exact || float64(got-exact)/float64(exact) > 0.008 {
			t.Errorf("q%.3f = %d, exact %d (%.3f%% off)", q, got, exact, 100*float64(got-exact)/float64(exact))
		}
	}
	if h.max != vals[len(vals)-1] {
		t.Errorf("max = %d, want %d", h.max, vals[len(vals)-1])
	}
	var empty histogram
	if s := empty.summary(); s.Count != 0 || s.P99Ms != 0 {
		t.Errorf("empty summary = %+v", s)
	}
}
