package kernels

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"testing"
	"unsafe"
)

// TestHalfKernelsFaultRecoverably: weights mapped from a file that is then
// truncated under the map (a fault on the next read of the lost pages)
// make the 16-bit kernels panic, not kill the process, when the goroutine
// has debug.SetPanicOnFault: the assembly GEMV and Widen, on every path,
// so the model's callers can recover the fault into an error.
func TestHalfKernelsFaultRecoverably(t *testing.T) {
	const rows, cols = 64, 512 // 64 KiB of BF16: sixteen 4 KiB pages
	path := filepath.Join(t.TempDir(), "weights.bin")
	if err := os.WriteFile(path, make([]byte, 2*rows*cols), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := syscall.Mmap(int(f.Fd()), 0, 2*rows*cols, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(data)
	w := unsafe.Slice((*uint16)(unsafe.Pointer(&data[0])), rows*cols)
	if err := f.Truncate(4096); err != nil { // the first page stays
		t.Fatal(err)
	}
	x, y := make([]float32, cols), make([]float32, rows)
	forEachPath(t, func(t *testing.T) {
		for _, c := range []struct {
			name string
			run  func()
		}{
			{"GemvBF16", func() { GemvBF16(y, w, x, rows, cols) }},
			{"GemvF16", func() { GemvF16(y, w, x, rows, cols) }},
			{"WidenBF16", func() { WidenBF16(make([]float32, len(w)), w) }},
			{"GemmBF16", func() {
				GemmBF16(false, true, 8, rows, cols, make([]float32, 8*cols), cols, w, cols, 0, make([]float32, 8*rows), rows)
			}},
		} {
			if !panicsOnFault(c.run) {
				t.Errorf("%s %s: no panic reading a truncated map", Active(), c.name)
			}
		}
	})
}

// panicsOnFault runs f with faults turned into panics and reports whether
// it panicked.
func panicsOnFault(f func()) (panicked bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() { panicked = recover() != nil }()
	f()
	return false
}
