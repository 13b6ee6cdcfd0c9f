package kernels

import (
	"fmt"
	"runtime"
	"sync"
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

// TestConcurrentlySharesCores: Concurrently calls f once per part, runs
// the parts at the same time (each waits for all to have started), gives
// each part's loops GOMAXPROCS/n workers (at least 1) while they run, and
// all of them again afterwards.
func TestConcurrentlySharesCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, n := range []int{1, 2, 3, 8} {
		var calls [8]atomic.Int32
		var started sync.WaitGroup
		started.Add(n)
		workers := make([]int, n)
		Concurrently(n, func(i int) {
			calls[i].Add(1)
			started.Done()
			started.Wait() // deadlocks unless every part runs at once
			workers[i] = Workers()
		})
		for i := range n {
			if c := calls[i].Load(); c != 1 {
				t.Errorf("n=%d: part %d called %d times", n, i, c)
			}
			if want := max(1, 4/n); workers[i] != want {
				t.Errorf("n=%d: part %d had %d workers, want %d", n, i, workers[i], want)
			}
		}
		if w := Workers(); w != 4 {
			t.Errorf("after Concurrently(%d): %d workers, want 4", n, w)
		}
	}
}
