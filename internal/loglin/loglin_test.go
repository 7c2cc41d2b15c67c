package loglin

import (
	"math"
	"testing"
)

func TestBucketsCoverEveryValue(t *testing.T) {
	for _, sb := range []uint{4, 7} {
		width := 1.0 / float64(uint(1)<<sb)
		values := []int64{0, 1, 2, 31, 32, 33, 255, 256, 257, 1000, 999_999, 1_000_000_007, 3 << 40, math.MaxInt64 - 1, math.MaxInt64}
		prev := -1
		for _, v := range values {
			b := Bucket(v, sb)
			if b < prev || b >= Buckets(sb) {
				t.Fatalf("subBits %d: Bucket(%d) = %d (prev %d, %d buckets)", sb, v, b, prev, Buckets(sb))
			}
			prev = b
			up := Upper(b, sb)
			if up < v {
				t.Errorf("subBits %d: Upper(Bucket(%d)) = %d, below the value", sb, v, up)
			}
			if b > 0 {
				lo := Upper(b-1, sb) + 1
				if lo > v {
					t.Errorf("subBits %d: %d is below its bucket's lower bound %d", sb, v, lo)
				}
				if lo >= 2<<sb && float64(up-lo+1)/float64(lo) > width+1e-12 {
					t.Errorf("subBits %d: bucket %d [%d, %d] wider than %.4f of its lower bound", sb, b, lo, up, width)
				}
			}
		}
		if got := Bucket(-5, sb); got != 0 {
			t.Errorf("Bucket(-5) = %d, want 0", got)
		}
		if got := Upper(Buckets(sb)-1, sb); got != math.MaxInt64 {
			t.Errorf("subBits %d: the last bucket ends at %d, want MaxInt64", sb, got)
		}
	}
}
