package kernels

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestHugePages: HugePages keeps the contents of its slices and, where
// the kernel offers transparent huge pages (not "[never]"), backs every
// whole 2 MiB stretch of their memory with them, the mapping holding them
// gaining at least that many bytes of AnonHugePages: for one slice, and
// for a slice cut in two in the middle of a huge page, given in either
// order (the two lie end to end and count as one).
func TestHugePages(t *testing.T) {
	thp, thpErr := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	var kept [][]float32
	defer func() { runtime.KeepAlive(kept) }()
	thpOn := thpErr == nil && !strings.Contains(string(thp), "[never]")
	if !thpOn {
		t.Logf("transparent huge pages off (%q, %v): only the contents are checked", thp, thpErr)
	}
	for _, c := range []struct {
		name  string
		parts func(x []float32, midPage int) [][]float32
	}{
		{"one slice", func(x []float32, _ int) [][]float32 { return [][]float32{x} }},
		{"two halves", func(x []float32, mid int) [][]float32 { return [][]float32{x[:mid], x[mid:]} }},
		{"two halves backwards", func(x []float32, mid int) [][]float32 { return [][]float32{x[mid:], x[:mid]} }},
	} {
		x := make([]float32, 3*hugePage/4) // 6 MiB: two or three whole huge pages inside
		kept = append(kept, x)             // each case on memory no earlier case collapsed
		for i := range x {
			x[i] = float32(i)
		}
		lo := uintptr(unsafe.Pointer(&x[0]))
		first := (lo + hugePage - 1) &^ (hugePage - 1)
		whole := int(((lo+4*uintptr(len(x)))&^(hugePage-1) - first) / hugePage)
		midPage := int(first-lo)/4 + hugePage/8 // halfway into the first whole huge page
		hi := lo + 4*uintptr(len(x))
		before := anonHugeBytes(t, lo, hi)
		HugePages(c.parts(x, midPage)...)
		for i, v := range x {
			if v != float32(i) {
				t.Fatalf("%s: x[%d] = %v after HugePages, want %d", c.name, i, v, i)
			}
		}
		if gained := anonHugeBytes(t, lo, hi) - before; thpOn && gained < whole*hugePage {
			t.Errorf("%s: the mapping gained %d bytes of huge pages, want at least %d (%d whole huge pages)", c.name, gained, whole*hugePage, whole)
		}
	}
}

// anonHugeBytes is the AnonHugePages of the mappings overlapping
// [lo, hi), read from /proc/self/smaps (a slice of the Go heap may span
// two).
func anonHugeBytes(t *testing.T, lo, hi uintptr) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inside, found, total := false, false, 0
	for s := bufio.NewScanner(f); s.Scan(); {
		fields := strings.Fields(s.Text())
		if len(fields) == 0 {
			continue
		}
		if from, to, ok := strings.Cut(fields[0], "-"); ok && !strings.HasSuffix(fields[0], ":") {
			l, err1 := strconv.ParseUint(from, 16, 64)
			h, err2 := strconv.ParseUint(to, 16, 64)
			inside = err1 == nil && err2 == nil && uint64(lo) < h && l < uint64(hi)
			found = found || inside
			continue
		}
		if inside && fields[0] == "AnonHugePages:" {
			kb, err := strconv.Atoi(fields[1])
			if err != nil {
				t.Fatal(err)
			}
			total += kb << 10
		}
	}
	if !found {
		t.Fatalf("no mapping in /proc/self/smaps holds [%#x, %#x)", lo, hi)
	}
	return total
}

// TestHugePageAligned: a slice of at least a huge page starts on a 2 MiB
// boundary, holds n zeroes and cannot grow into the spare memory; a
// smaller one is plain.
func TestHugePageAligned(t *testing.T) {
	for _, n := range []int{hugePage / 4, hugePage/4 + 1, 3*hugePage/4 + 5} {
		x := HugePageAligned[float32](n)
		if len(x) != n || cap(x) != n {
			t.Fatalf("HugePageAligned(%d): len %d cap %d, want both %d", n, len(x), cap(x), n)
		}
		if at := uintptr(unsafe.Pointer(&x[0])) % hugePage; at != 0 {
			t.Fatalf("HugePageAligned(%d) starts %d bytes past a 2 MiB boundary", n, at)
		}
		for i, v := range x {
			if v != 0 {
				t.Fatalf("HugePageAligned(%d)[%d] = %v, want 0", n, i, v)
			}
		}
	}
	if x := HugePageAligned[float64](100); len(x) != 100 || cap(x) != 100 {
		t.Fatalf("HugePageAligned(100): len %d cap %d, want 100", len(x), cap(x))
	}
}
