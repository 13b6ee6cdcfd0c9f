package kernels

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

// TestChunksNestedAndConcurrent: loops started from several goroutines at
// once, with loops nested in their parts, cover every index once and
// finish: a helper already running a part is never handed another job
// (it would wait on itself), and a job is never lost between callers.
func TestChunksNestedAndConcurrent(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	const callers, outer, inner = 8, 64, 50
	seen := make([]atomic.Int32, callers*outer*inner)
	finished := make(chan struct{})
	go func() {
		var wg sync.WaitGroup
		for c := range callers {
			wg.Go(func() {
				chunks(outer, 4, func(lo, hi int) {
					for o := lo; o < hi; o++ {
						chunks(inner, 4, func(lo, hi int) {
							for i := lo; i < hi; i++ {
								seen[(c*outer+o)*inner+i].Add(1)
							}
						})
					}
				})
			})
		}
		wg.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-time.After(20 * time.Second):
		t.Fatal("nested and concurrent loops did not finish in 20 s")
	}
	for i := range seen {
		if c := seen[i].Load(); c != 1 {
			t.Fatalf("index %d seen %d times", i, c)
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

// TestLoopsBesideConcurrently: loops dispatched from one goroutine while
// another starts and ends Concurrently over and over all finish. A helper
// stops spinning while Concurrently runs parts; one woken for a job handed
// over just before must still take it (it once parked again, and the loop
// waited for ever).
func TestLoopsBesideConcurrently(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	stop := make(chan struct{})
	toggled := make(chan struct{})
	go func() {
		defer close(toggled)
		for {
			select {
			case <-stop:
				return
			default:
				Concurrently(2, func(int) {})
			}
		}
	}()
	finished := make(chan int)
	go func() {
		var sum atomic.Int64
		for range 20000 {
			chunks(8, 4, func(lo, hi int) { sum.Add(int64(hi - lo)) })
		}
		finished <- int(sum.Load())
	}()
	select {
	case got := <-finished:
		if got != 20000*8 {
			t.Errorf("the loops covered %d indices, want %d", got, 20000*8)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("loops beside Concurrently did not finish in 30 s")
	}
	close(stop)
	<-toggled
}
