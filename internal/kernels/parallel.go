package kernels

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// ParallelFor calls f on disjoint chunks [lo, hi) covering [0, n), on up to
// Workers() goroutines when the work (n * cost, in rough multiply-adds) is
// at least ParallelMinWork, else in the caller.
func ParallelFor(n int, cost float64, f func(lo, hi int)) {
	workers := 1
	if float64(n)*cost >= ParallelMinWork {
		workers = Workers()
	}
	chunks(n, workers, f)
}

// Workers is how many goroutines a parallel loop may use: GOMAXPROCS, or
// its share of them while Concurrently runs parts side by side. It takes
// the scheduler lock (runtime.GOMAXPROCS), so callers ask only once they
// know their work is large enough to split.
func Workers() int {
	return max(1, runtime.GOMAXPROCS(0)/(1+int(extraParts.Load())))
}

// extraParts is how many parts beyond the first Concurrently runs at once
// (0 outside it).
var extraParts atomic.Int32

// Concurrently runs f(0), ..., f(n-1) at once, each on its own goroutine
// (the caller's included), and returns when all have. While they run, the
// parallel loops and GEMMs they call get Workers() = GOMAXPROCS/n
// goroutines each, so the parts share the cores instead of each asking for
// all of them. Calls must not nest.
func Concurrently(n int, f func(i int)) {
	if n <= 1 {
		if n == 1 {
			f(0)
		}
		return
	}
	extraParts.Store(int32(n - 1))
	defer extraParts.Store(0)
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(i)
		}()
	}
	f(0)
	wg.Wait()
}

// ParallelMinWork is the work (multiply-adds) below which a second goroutine
// costs more than it saves. Waking an idle core goes through futex calls
// costing several microseconds a side: at the S benchmark size (B32 T12 D32)
// runtime.futex was 10% of the profile and a step took twice the CPU time
// with the threshold at 200k as at 1M.
const ParallelMinWork = 1_000_000

// chunks calls f on disjoint ranges [lo, hi) covering [0, n), on up to
// workers goroutines (the caller's and the idle helpers'). The range is cut
// into up to chunksPerWorker pieces per worker, handed out in order as
// workers become free, so a worker that loses its core for a while (the
// machine is shared) does not hold the others up at the join.
func chunks(n, workers int, f func(lo, hi int)) {
	workers = min(workers, n)
	if workers <= 1 {
		f(0, n)
		return
	}
	pieces := min(n, workers*chunksPerWorker)
	var next atomic.Int64
	share(workers, func() {
		for {
			i := int(next.Add(1)) - 1
			if i >= pieces {
				return
			}
			f(i*n/pieces, (i+1)*n/pieces)
		}
	})
}

// guidedChunks is chunks with pieces that shrink as the range runs out:
// each takes 1/(2 workers) of what is left, at least one, so the workers
// finish within one small piece of each other. Equal pieces may leave a
// worker alone with most of a piece at the end, a core idle in a loop
// bound by memory, as a decoding step's 61 GEMVs are: BenchmarkDecodeGemvs
// read their weights at 26.6, 26.8 and 27.4 GB/s against 26.3, 26.6 and
// 26.7 with equal pieces, run alternately. The pieces are the same at
// every call for the same n and workers; which worker runs which is not.
func guidedChunks(n, workers int, f func(lo, hi int)) {
	workers = min(workers, n)
	if workers <= 1 {
		f(0, n)
		return
	}
	var next atomic.Int64
	share(workers, func() {
		for {
			lo := int(next.Load())
			if lo >= n {
				return
			}
			hi := lo + ceilDiv(n-lo, 2*workers)
			if next.CompareAndSwap(int64(lo), int64(hi)) {
				f(lo, hi)
			}
		}
	})
}

// share runs work on the caller and up to workers-1 idle helpers at once
// and returns when every one has returned. A panic in a helper's part (a
// fault reading a mapped file the helper turned into one, see helper.run)
// is raised again on the caller once the others are done, where the
// caller can recover it; a panic in the caller's own part waits for the
// helpers too, so none still writes the loop's output once it is
// recovered.
func share(workers int, work func()) {
	var wg sync.WaitGroup
	var running atomic.Int32
	var raised atomic.Pointer[any]
	dispatch(workers-1, func() {
		defer func() {
			if r := recover(); r != nil {
				raised.CompareAndSwap(nil, &r)
			}
		}()
		work()
	}, &wg, &running)
	func() {
		defer func() {
			joinSpinning(&running)
			wg.Wait()
		}()
		work()
	}()
	if r := raised.Load(); r != nil {
		panic(*r)
	}
}

// joinSpin is how long a loop's caller, its own parts done, waits for the
// helpers by spinning before it parks in the WaitGroup. Parked, it is woken
// onto the helper's core, and the helper then waits for a core of its own
// (70-150 µs on this project's virtual machine) at the next loop: a
// decoding step runs about 60 loops of 90-500 µs.
const joinSpin = 200 * time.Microsecond

// joinSpinning returns once no helper is running a part of the loop, or
// joinSpin has passed.
func joinSpinning(running *atomic.Int32) {
	if running.Load() == 0 {
		return
	}
	until := time.Now().Add(joinSpin)
	for running.Load() != 0 && time.Now().Before(until) {
	}
}

// helpers are the goroutines that run the parts of parallel loops beside
// their callers. Starting a goroutine on an idle core took 70-150 µs on
// this project's virtual machine (the idle vCPU is halted and the host
// wakes it), which a GEMV of a decoding step (90-500 µs) lost outright: a
// helper that has run a part waits for the next by spinning (yielding to
// any other goroutine) for helperSpin before it parks.
var helpers struct {
	sync.Mutex
	all []*helper
}

// helperSpin is how long a helper waits for work on its core before it
// parks: longer than the gaps between a decoding step's products, short
// enough that an idle process soon gives its core back.
const helperSpin = 500 * time.Microsecond

// helper is one helper goroutine and the job handed to it.
type helper struct {
	busy atomic.Bool               // a job is handed to it and not done
	job  atomic.Pointer[helperJob] // the job handed over, until it takes it
	wake chan struct{}             // a token when a job is handed over
}

type helperJob struct {
	work    func()
	done    *sync.WaitGroup
	running *atomic.Int32 // helpers still running parts of the loop
}

// dispatch hands work to up to n idle helpers, starting helpers up to
// GOMAXPROCS-1 of them, and adds each taker to done and running. A helper that is busy
// (a part of an enclosing loop calls this one) is passed over, so nested
// loops never wait on themselves.
func dispatch(n int, work func(), done *sync.WaitGroup, running *atomic.Int32) {
	helpers.Lock()
	for len(helpers.all) < min(n, runtime.GOMAXPROCS(0)-1) {
		h := &helper{wake: make(chan struct{}, 1)}
		helpers.all = append(helpers.all, h)
		go h.run()
	}
	all := helpers.all
	helpers.Unlock()
	for _, h := range all {
		if n == 0 {
			return
		}
		if !h.busy.CompareAndSwap(false, true) {
			continue
		}
		done.Add(1)
		running.Add(1)
		h.job.Store(&helperJob{work: work, done: done, running: running})
		select {
		case h.wake <- struct{}{}:
		default: // a token is already waiting
		}
		n--
	}
}

// run takes jobs: after each it spins for helperSpin, then parks until
// the next token. It looks for a job before every decision to park, so a
// job handed over just before Concurrently started (when it stops
// spinning) is still taken once its token wakes it.
func (h *helper) run() {
	// A part may read weights mapped from a file that is then truncated:
	// the fault is a panic share hands to the loop's caller, which
	// recovers it into an error (internal/ops' ReadMapped), instead of a
	// SIGBUS that ends the process.
	debug.SetPanicOnFault(true)
	for {
		until := time.Now().Add(helperSpin)
		for {
			if j := h.job.Swap(nil); j != nil {
				j.work()
				h.busy.Store(false) // before Done: the caller may hand it the next job at once
				j.running.Add(-1)
				j.done.Done()
				until = time.Now().Add(helperSpin)
				continue
			}
			// While Concurrently runs parts, each has its share of the
			// cores and no helper: a spinning helper would take time
			// from them.
			if extraParts.Load() != 0 || !time.Now().Before(until) {
				break
			}
			runtime.Gosched()
		}
		<-h.wake
	}
}

// chunksPerWorker is how finely chunks cuts its range.
const chunksPerWorker = 4

var scratchPool = sync.Pool{New: func() any { return new([]float32) }}

// Scratch returns a float32 buffer of length n from a pool, contents
// undefined; hand it back with PutScratch when done.
func Scratch(n int) *[]float32 {
	p := scratchPool.Get().(*[]float32)
	if cap(*p) < n {
		*p = make([]float32, n)
	}
	*p = (*p)[:n]
	return p
}

// PutScratch returns a buffer from Scratch to the pool.
func PutScratch(p *[]float32) { scratchPool.Put(p) }

func ceilDiv(a, b int) int { return (a + b - 1) / b }
func roundUp(a, b int) int { return ceilDiv(a, b) * b }
