package verdict

import (
	"testing"

	"zerodrop.dev/zerodrop/internal/loglin"
)

// The array size is a constant; the layout is loglin's.
func TestHistogramSizeIsLoglins(t *testing.T) {
	if nBuckets != loglin.Buckets(subBits) {
		t.Errorf("nBuckets = %d, loglin.Buckets(%d) = %d", nBuckets, subBits, loglin.Buckets(subBits))
	}
}
