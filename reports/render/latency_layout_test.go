package render

import (
	"testing"

	"zerodrop.dev/zerodrop/internal/loglin"
)

// The array size is a constant; the layout is loglin's.
func TestBinCountIsLoglins(t *testing.T) {
	if binCount != loglin.Buckets(binSubBits) {
		t.Errorf("binCount = %d, loglin.Buckets(%d) = %d", binCount, binSubBits, loglin.Buckets(binSubBits))
	}
}
