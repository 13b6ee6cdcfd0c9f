package kernels

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// TestChunksCoverOnce: chunks hands every index of [0, n) to f exactly once,
// in non-empty ranges, for worker counts below, at and above n.
func TestChunksCoverOnce(t *testing.T) {
	for _, n := range []int{0, 1, 5, 64, 1000} {
		for _, workers := range []int{1, 2, 3, 16} {
			t.Run(fmt.Sprintf("n%d,w%d", n, workers), func(t *testing.T) {
				seen := make([]atomic.Int32, n)
				chunks(n, workers, func(lo, hi int) {
					if lo >= hi && n > 0 {
						t.Errorf("empty range [%d, %d)", lo, hi)
					}
					for i := lo; i < hi; i++ {
						seen[i].Add(1)
					}
				})
				for i := range seen {
					if c := seen[i].Load(); c != 1 {
						t.Fatalf("index %d seen %d times", i, c)
					}
				}
			})
		}
	}
}
