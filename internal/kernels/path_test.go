package kernels

import (
	"os"
	"strings"
	"testing"
)

// testPaths returns the paths the tests of this package run on: the one
// ATTNSCOPE_KERNEL forces (CI runs the tests once per path), else every
// path this CPU runs.
func testPaths(t *testing.T) []Path {
	t.Helper()
	if os.Getenv(EnvVar) != "" {
		if err := Check(); err != nil {
			t.Fatal(err)
		}
		return []Path{Active()}
	}
	var ps []Path
	for p := Generic; p <= detected; p++ {
		ps = append(ps, p)
	}
	return ps
}

// forEachPath runs f as a subtest on each of testPaths, with that path
// active, and restores the path in use before.
func forEachPath(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	defer setPath(active)
	for _, p := range testPaths(t) {
		setPath(p)
		t.Run(p.String(), f)
	}
}

// TestChoosePath: the ATTNSCOPE_KERNEL values and what each gives on a CPU
// whose best path is given; errors name the variable, the value and the
// paths allowed on that CPU.
func TestChoosePath(t *testing.T) {
	cases := []struct {
		env     string
		cpu     Path
		want    Path
		wantErr string
	}{
		{"", AVX512, AVX512, ""},
		{"auto", AVX2, AVX2, ""},
		{" generic ", AVX512, Generic, ""},
		{"avx2", AVX512, AVX2, ""},
		{"avx512", AVX512, AVX512, ""},
		{"generic", Generic, Generic, ""},
		{"avx512", AVX2, AVX2, `ATTNSCOPE_KERNEL="avx512": this CPU cannot run the avx512 kernels (allowed here: auto, generic, avx2)`},
		{"avx2", Generic, Generic, `ATTNSCOPE_KERNEL="avx2": this CPU cannot run the avx2 kernels (allowed here: auto, generic)`},
		{"AVX2", AVX512, AVX512, `ATTNSCOPE_KERNEL="AVX2": unknown kernel path (allowed here: auto, generic, avx2, avx512)`},
		{"sse", AVX512, AVX512, `unknown kernel path`},
	}
	for _, c := range cases {
		got, err := choosePath(c.env, c.cpu)
		if got != c.want {
			t.Errorf("choosePath(%q, %v) = %v, want %v", c.env, c.cpu, got, c.want)
		}
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("choosePath(%q, %v): %v", c.env, c.cpu, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("choosePath(%q, %v) error %v, want %q", c.env, c.cpu, err, c.wantErr)
		}
	}
}

// TestActivePath: with ATTNSCOPE_KERNEL set the path in use is the one it
// names and Check is nil; unset, it is the best the CPU runs.
func TestActivePath(t *testing.T) {
	env := os.Getenv(EnvVar)
	if env == "" {
		if Active() != detected || Check() != nil {
			t.Fatalf("active %v, detected %v, check %v", Active(), detected, Check())
		}
		return
	}
	if err := Check(); err != nil {
		t.Fatal(err)
	}
	if Active().String() != strings.TrimSpace(env) {
		t.Fatalf("%s=%q but the active path is %v", EnvVar, env, Active())
	}
}

// TestBackendNamesPath: Backend reports what float32 GEMMs run on for each
// path (the BLAS type in the openblas build, and on the generic path of
// other architectures).
func TestBackendNamesPath(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		want := map[Path]string{
			Generic: "attnscope sgemm, pure Go",
			AVX2:    "attnscope sgemm, AVX2/FMA assembly",
			AVX512:  "attnscope sgemm, AVX-512 + AVX2/FMA assembly",
		}[Active()]
		switch {
		case sgemmPreferBLAS:
			want = "BLAS netlib.Implementation"
		case Active() == Generic && !sgemmGoOnGeneric:
			want = "BLAS gonum.Implementation"
		}
		if got := Backend(); got != want {
			t.Fatalf("Backend() = %q, want %q", got, want)
		}
	})
}
