package kernels

import (
	"cmp"
	"runtime"
	"slices"
	"syscall"
	"unsafe"
)

// madvCollapse is Linux's MADV_COLLAPSE (6.1 on): collapse the range's
// pages into huge pages now, keeping their contents.
const madvCollapse = 25

// HugePages backs the whole 2 MiB stretches of the memory of xs with huge
// pages, now, keeping the contents (Linux's MADV_COLLAPSE); slices that
// lie end to end count as one stretch of memory (a model's weights mostly
// do), so a huge page may span two of them. A decoding step streams every
// weight once: with 4 KiB pages that is a TLB miss, and a page walk
// through the virtual machine's two levels of tables, every 64 cache
// lines. It is a hint: on a kernel without MADV_COLLAPSE, with huge pages
// turned off, or short of memory, the pages stay as they were, and nothing
// else changes. (Go's heap gets no huge pages of itself where transparent
// huge pages are "madvise", as on most distributions and here.)
func HugePages(xs ...[]float32) {
	for _, r := range runsOf(xs) {
		start := (r.lo + hugePage - 1) &^ (hugePage - 1)
		end := r.hi &^ (hugePage - 1)
		if start < end {
			// by address: a run may span several Go objects, which no one slice may
			_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, start, end-start, madvCollapse)
		}
	}
	runtime.KeepAlive(xs)
}

// memRun is a stretch of memory [lo, hi).
type memRun struct{ lo, hi uintptr }

// runsOf merges the memory of the non-empty slices of xs that lie end to
// end, or overlap, into runs.
func runsOf(xs [][]float32) []memRun {
	var runs []memRun
	for _, x := range xs {
		if len(x) > 0 {
			lo := uintptr(unsafe.Pointer(&x[0]))
			runs = append(runs, memRun{lo, lo + 4*uintptr(len(x))})
		}
	}
	slices.SortFunc(runs, func(a, b memRun) int { return cmp.Compare(a.lo, b.lo) })
	var merged []memRun
	for _, r := range runs {
		if n := len(merged); n > 0 && r.lo <= merged[n-1].hi {
			merged[n-1].hi = max(merged[n-1].hi, r.hi)
			continue
		}
		merged = append(merged, r)
	}
	return merged
}
