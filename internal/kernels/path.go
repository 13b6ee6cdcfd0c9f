package kernels

import (
	"fmt"
	"os"
	"strings"
)

// Path is a set of kernels: each is chosen at start-up, the best the CPU
// runs unless ATTNSCOPE_KERNEL names another.
type Path int

const (
	// Generic is pure Go: the assembly's operations in Go, in its order
	// (float32 GEMMs through sgemmGo on amd64, gonum elsewhere;
	// exponentials through expLane).
	Generic Path = iota
	// AVX2 is the AVX2 + FMA (+ F16C) assembly: 6x16 GEMM tiles, 8-lane
	// exp.
	AVX2
	// AVX512 adds the AVX-512 GEMM kernels (6x32, 12x32, 12x16, masked
	// edges) to AVX2's.
	AVX512
)

var pathNames = []string{Generic: "generic", AVX2: "avx2", AVX512: "avx512"}

func (p Path) String() string { return pathNames[p] }

// EnvVar names the environment variable that forces a path: generic, avx2
// or avx512 (empty or auto: the best the CPU runs). A path the CPU lacks, or
// any other value, leaves the detected path in use and makes Check fail.
const EnvVar = "ATTNSCOPE_KERNEL"

var (
	// detected is the best path this CPU and OS run.
	detected = detectPath()
	// active is the path in use; useAVX2 and useAVX512 mirror it for the
	// hot loops.
	active    Path
	useAVX2   bool
	useAVX512 bool
	// envErr is why ATTNSCOPE_KERNEL was not honoured, if it was not.
	envErr error
)

func init() {
	p, err := choosePath(os.Getenv(EnvVar), detected)
	if err != nil {
		p, envErr = detected, err
	}
	setPath(p)
}

// choosePath returns the path an ATTNSCOPE_KERNEL value asks for on a CPU
// whose best path is cpu.
func choosePath(env string, cpu Path) (Path, error) {
	env = strings.TrimSpace(env)
	if env == "" || env == "auto" {
		return cpu, nil
	}
	allowed := strings.Join(append([]string{"auto"}, pathNames[:cpu+1]...), ", ")
	for p, name := range pathNames {
		if env != name {
			continue
		}
		if Path(p) > cpu {
			return cpu, fmt.Errorf("%s=%q: this CPU cannot run the %s kernels (allowed here: %s)", EnvVar, env, name, allowed)
		}
		return Path(p), nil
	}
	return cpu, fmt.Errorf("%s=%q: unknown kernel path (allowed here: %s)", EnvVar, env, allowed)
}

func setPath(p Path) {
	active, useAVX2, useAVX512 = p, p >= AVX2, p >= AVX512
}

// Active returns the path in use.
func Active() Path { return active }

// Detected returns the best path this CPU runs, whatever ATTNSCOPE_KERNEL
// says: the paths from Generic to it are the ones the variable may force.
func Detected() Path { return detected }

// Check returns why ATTNSCOPE_KERNEL was not honoured, or nil. Commands
// call it first, so a mistyped value is an error, not a silent fallback.
func Check() error { return envErr }

// Backend names what float32 GEMMs run on, for benchmark reports: this
// package's assembly kernels or their Go form, or the BLAS (gonum's pure
// Go on other architectures, OpenBLAS with the openblas build tag).
func Backend() string {
	switch {
	case useSgemm() && useAVX512:
		return "attnscope sgemm, AVX-512 + AVX2/FMA assembly"
	case useSgemm():
		return "attnscope sgemm, AVX2/FMA assembly"
	case useSgemmGo():
		return "attnscope sgemm, pure Go"
	}
	return fmt.Sprintf("BLAS %T", blasImpl)
}
