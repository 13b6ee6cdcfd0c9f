package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/cli"
	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/layers"
)

// options are the command's flags.
type options struct {
	configs []size
	paths   []layers.Path // the Go side runs each config once per path
	rounds  int
	reps    int
	steps   int
	warmup  int
	python  string
	torch   string
	goOnly  bool
	llama2c string // a checkout of llama2.c, whose run.c -decode-config llama also times
	threads []torchThreads
	// env is added to every child's environment (OPENBLAS_CORETYPE).
	env []string
}

const usage = `usage: bench [-configs S,M] [-go-only] [flags]
       bench -decode [-decode-config sort|gpt2|llama] [-llama2c DIR] [-go-only] [flags]
       bench -decode -decode-config llama3-8b -model-dir DIR [flags]

Trains the same small models side by side in Go and in PyTorch
(cmd/bench/torch_ref.py) and prints steps/s, their ratio, GFLOP/s, allocations
and peak RSS per config. The configs: S and M, one attention-only layer (S: 32
wide, 12 tokens; M: 128 wide, 64 tokens); sort, configs/sort.yaml's model; L4,
four full blocks 128 wide; M-rope, M-gqa, ... and L4-llama, variants of M and
L4 (docs/benchmarks.md); gpt2 and gpt2-medium, GPT-2 small's and medium's
shapes fine-tuned at batch 4 of 64 tokens as nanoGPT's train.py does (tied
head, AdamW), for their peak RSS beside PyTorch's (-configs gpt2 -path fused).
The whole comparison takes over 10 minutes on 2 cores;
-go-only -configs S -rounds 1 -reps 1 is a quick look.
With -decode, times greedy decoding with the KV cache instead (and, on GPT-2
small's shape and on a Llama of stories110M's, the read bandwidth's limit and a
forward keeping every attention map) against cmd/bench/torch_decode.py, and the
Llama against llama2.c's run.c too when -llama2c names a checkout of it.
-decode-config llama3-8b writes a random BF16 model of Llama 3.1 8B's shape
(16 GB) into -model-dir, or reuses the one written there, and times it
mapped against the read bandwidth and the float32 GEMM, in Go alone.
Run it from the repository root. PyTorch needs /usr/bin/python3 with torch.

flags:
`

// run parses args and either runs the whole comparison or, with -worker, one
// Go measurement in this process (the comparison starts one worker process
// per Go measurement, so each has its own peak RSS).
func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	configs := fs.String("configs", "S,M,sort,L4", "comma-separated configurations to run ("+sizeNames()+")")
	rounds := fs.Int("rounds", 2, "alternation rounds: each runs Go, then PyTorch at every thread count, per config")
	reps := fs.Int("reps", 5, "timed repetitions per process (the figure is the median over every repetition of every round)")
	steps := fs.Int("steps", 0, "timed steps per repetition (default "+defaultSteps()+")")
	warmup := fs.Int("warmup", 0, "untimed steps before timing (default: -steps)")
	python := fs.String("python", "/usr/bin/python3", "Python with torch (Debian python3-torch)")
	torch := fs.String("torch", "cmd/bench/torch_ref.py", "the PyTorch side")
	threads := fs.String("threads", "1,2,1/2,2/1", "PyTorch thread settings, each N (torch and OpenBLAS threads) or N/B (N torch, B OpenBLAS threads); the best is compared")
	goOnly := fs.Bool("go-only", false, "skip PyTorch (no prerequisites needed)")
	coretype := fs.String("coretype", "auto", "OPENBLAS_CORETYPE for PyTorch (and the openblas Go build): auto picks SkylakeX or Haswell from the CPU flags, none leaves OpenBLAS to detect the CPU")
	paths := fs.String("path", "fused,gorgonia", "attention paths the Go side runs each config on, comma-separated (fused: this project's ops; gorgonia: Gorgonia's own)")
	decode := fs.Bool("decode", false, "measure greedy decoding instead of training: tokens/s with the KV cache, without it, and PyTorch's (cmd/bench/torch_decode.py) with its cache")
	decodeConfig := fs.String("decode-config", "sort", "the model -decode times: sort (sort's model, batch 1 and 32, with and without the cache), gpt2 (GPT-2 small's shape at batch 1 against the read bandwidth's limit, and a forward over 256 tokens keeping every attention map), llama (the same on a Llama of llama2.c's stories110M's shape) or llama3-8b (Llama 3.1 8B's shape in BF16, written to -model-dir and mapped)")
	modelDir := fs.String("model-dir", "", "with -decode-config llama3-8b: the directory its random BF16 model is written into (about 16 GB; it must be new or empty, or hold that model from an earlier run, which is reused)")
	llama2cDir := fs.String("llama2c", "", "with -decode-config llama: a checkout of github.com/karpathy/llama2.c whose run.c is compiled (gcc) and timed on the same weights; unset skips run.c")
	worker := fs.String("worker", "", "internal: run one Go measurement of this config (on the one path -path names) and print JSON")
	cli.Rename(fs, "paths", "path", stderr) // inspect and sample's name
	if helped, err := cli.Parse(fs, args, usage, stdout); helped || err != nil {
		return err
	}
	if err := kernels.Check(); err != nil {
		return err
	}
	if *rounds < 1 || *reps < 1 || *steps < 0 || *warmup < 0 {
		return errors.New("-rounds and -reps must be >= 1, -steps and -warmup >= 0")
	}
	if !*decode && flagSet(fs, "decode-config") {
		return errors.Errorf("-decode-config %q: it picks the model of -decode, which is not set", *decodeConfig)
	}
	if *modelDir != "" && !*decode {
		return errors.Errorf("-model-dir %q: it holds the model of -decode -decode-config llama3-8b, and -decode is not set", *modelDir)
	}
	if *llama2cDir != "" && (!*decode || *decodeConfig != "llama") {
		return errors.Errorf("-llama2c %q: run.c is timed with -decode -decode-config llama only", *llama2cDir)
	}
	if *llama2cDir != "" {
		if err := checkLlama2cCheckout(*llama2cDir); err != nil {
			return err
		}
	}
	if *worker == "peak" {
		return runPeakWorker(stdout)
	}
	var goPaths []layers.Path
	for _, name := range strings.Split(*paths, ",") {
		p, err := layers.ParsePath(strings.TrimSpace(name))
		if err != nil || strings.TrimSpace(name) == "" {
			return errors.Errorf("-path %q: want a comma-separated list of %s and %s", *paths, layers.Fused, layers.Gorgonia)
		}
		goPaths = append(goPaths, p)
	}
	if *worker != "" {
		if len(goPaths) != 1 {
			return errors.Errorf("-worker runs one path, -path %q names %d", *paths, len(goPaths))
		}
		return runWorker(*worker, goPaths[0], *steps, *warmup, *reps, stdout)
	}
	opts := options{rounds: *rounds, reps: *reps, steps: *steps, warmup: *warmup, python: *python, torch: *torch, goOnly: *goOnly, llama2c: *llama2cDir, paths: goPaths}
	if *decode {
		setting, err := decodeSettingNamed(*decodeConfig)
		if err != nil {
			return err
		}
		if err := checkModelDirFlag(setting, *modelDir); err != nil {
			return err
		}
		if setting.hf != nil { // Go alone: PyTorch cannot read BF16 weights in place
			return runMapped(opts, setting, *modelDir, stdout, stderr)
		}
		if ct := chooseCoretype(*coretype); ct != "" {
			opts.env = []string{"OPENBLAS_CORETYPE=" + ct}
		}
		if !opts.goOnly {
			if _, err := checkTorch(opts.python, opts.torch, opts.env); err != nil {
				return err
			}
		}
		return compareDecode(opts, setting, stdout, stderr)
	}
	for _, name := range strings.Split(*configs, ",") {
		s, err := sizeNamed(strings.TrimSpace(name))
		if err != nil {
			return err
		}
		opts.configs = append(opts.configs, s)
	}
	for _, t := range strings.Split(*threads, ",") {
		tt, err := parseThreads(strings.TrimSpace(t))
		if err != nil {
			return errors.Wrapf(err, "-threads %q", *threads)
		}
		opts.threads = append(opts.threads, tt)
	}
	if ct := chooseCoretype(*coretype); ct != "" {
		opts.env = []string{"OPENBLAS_CORETYPE=" + ct}
	}
	return compare(opts, stdout, stderr)
}

// checkModelDirFlag refuses -model-dir without a setting that writes a
// model, and such a setting without it: the bench writes gigabytes only
// where the user says.
func checkModelDirFlag(s decodeSetting, dir string) error {
	switch {
	case s.hf != nil && dir == "":
		return errors.Errorf("-decode-config %s writes a model of its shape (%s) and needs -model-dir: a new or empty directory for it, or the one an earlier run wrote", s.name, s.describe)
	case s.hf == nil && dir != "":
		return errors.Errorf("-model-dir %q: -decode-config %s times a model in memory; only a Hugging Face shape (llama3-8b) is written to a directory", dir, s.name)
	}
	return nil
}

// flagSet reports whether the command line set the flag called name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// chooseCoretype resolves -coretype. OpenBLAS 0.3.21 does not know every
// CPU: on this project's machine (a virtualised Sapphire Rapids) it falls
// back to its Prescott (SSE3) kernels, a quarter of the speed of its
// SkylakeX (AVX-512) ones. "auto" names the best kernel set the CPU flags
// allow, unless OPENBLAS_CORETYPE is already set; "none" leaves OpenBLAS to
// detect.
func chooseCoretype(flagValue string) string {
	switch flagValue {
	case "none":
		return ""
	case "auto":
		if env := os.Getenv("OPENBLAS_CORETYPE"); env != "" {
			return env
		}
		info, err := os.ReadFile("/proc/cpuinfo")
		if err != nil {
			return ""
		}
		flags := map[string]bool{}
		for _, line := range strings.Split(string(info), "\n") {
			if name, list, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "flags" {
				for _, f := range strings.Fields(list) {
					flags[f] = true
				}
				break
			}
		}
		switch {
		case flags["avx512f"] && flags["avx512bw"] && flags["avx512dq"] && flags["avx512vl"]:
			return "SkylakeX"
		case flags["avx2"] && flags["fma"]:
			return "Haswell"
		}
		return ""
	}
	return flagValue
}

// torchThreads is one PyTorch thread setting: torch's intra-op threads and
// OpenBLAS's.
type torchThreads struct{ torch, blas int }

func (t torchThreads) String() string {
	if t.blas == t.torch {
		return fmt.Sprintf("%dt", t.torch)
	}
	return fmt.Sprintf("%dt/%db", t.torch, t.blas)
}

// parseThreads reads "N" or "N/B".
func parseThreads(s string) (torchThreads, error) {
	torchPart, blasPart, split := strings.Cut(s, "/")
	var t torchThreads
	if _, err := fmt.Sscan(torchPart, &t.torch); err != nil || t.torch < 1 {
		return t, errors.Errorf("%q: want N or N/B with positive integers", s)
	}
	t.blas = t.torch
	if split {
		if _, err := fmt.Sscan(blasPart, &t.blas); err != nil || t.blas < 1 {
			return t, errors.Errorf("%q: want N or N/B with positive integers", s)
		}
	}
	return t, nil
}

// measurement is the pooled result of one side at one config.
type measurement struct {
	rates   []float64 // steps/s of every repetition of every round
	peakRSS int64     // bytes, the largest over the processes
	bytes   float64   // Go only: bytes allocated per step (mean over workers)
	allocs  float64   // Go only: allocations per step
	loss    float64
	cpuWall float64 // lowest CPU-per-wall seen (a loaded machine shows here)
}

func (m *measurement) add(rates []float64, rss int64, cpuWall, loss float64) {
	m.rates = append(m.rates, rates...)
	m.peakRSS = max(m.peakRSS, rss)
	if m.cpuWall == 0 || cpuWall < m.cpuWall {
		m.cpuWall = cpuWall
	}
	m.loss = loss
}

// row is one config's line of the table on one Go path. The rows of one
// config share their PyTorch measurements; the first of them takes them.
type row struct {
	size      size
	path      layers.Path
	goRes     measurement
	torch     map[torchThreads]*measurement
	takeTorch bool
}

func compare(opts options, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return errors.Wrap(err, "finding this program to start workers")
	}
	var peak *sgemmPeak
	if !opts.goOnly {
		if peak, err = checkTorch(opts.python, opts.torch, opts.env); err != nil {
			return err
		}
	}
	goPeak := 0.0
	var rows []*row
	for _, s := range opts.configs {
		torch := map[torchThreads]*measurement{}
		for i, p := range opts.paths {
			rows = append(rows, &row{size: s, path: p, torch: torch, takeTorch: i == 0 && s.onTorch()})
		}
	}
	load0 := loadAvg()
	for round := 1; round <= opts.rounds; round++ {
		// The peaks are measured every round and the best kept: on a shared
		// machine one measurement can land on a busy moment.
		fmt.Fprintf(stderr, "round %d/%d: GEMM peaks\n", round, opts.rounds)
		p, err := runGoPeak(exe, opts.env)
		if err != nil {
			return err
		}
		goPeak = max(goPeak, p)
		if peak != nil && round > 1 {
			again, err := checkTorch(opts.python, opts.torch, opts.env)
			if err != nil {
				return err
			}
			peak.GFLOPs = max(peak.GFLOPs, again.GFLOPs)
		}
		for _, r := range rows {
			fmt.Fprintf(stderr, "round %d/%d, %s: Go %s", round, opts.rounds, r.size.Name, r.path)
			if err := r.runGo(exe, opts); err != nil {
				return err
			}
			if opts.goOnly || !r.takeTorch {
				fmt.Fprintln(stderr)
				continue
			}
			for _, t := range opts.threads {
				fmt.Fprintf(stderr, ", PyTorch %v", t)
				if err := r.runTorch(t, opts); err != nil {
					return err
				}
			}
			fmt.Fprintln(stderr)
		}
	}
	fmt.Fprintf(stdout, "Go %s, GOMAXPROCS %d, float32 GEMM: %s (Gorgonia's own ops: %T); load average %.2f before, %.2f after\n",
		runtime.Version(), runtime.GOMAXPROCS(0), kernels.Backend(), gorgonia.WhichBLAS(), load0, loadAvg())
	machinePeak := goPeak
	if peak != nil {
		fmt.Fprintf(stdout, "PyTorch %s on OpenBLAS core %s (%s); its sgemm: %.1f GFLOP/s (2 threads, %d^3, best of every round)\n",
			peak.Torch, peak.Core, coreNote(opts.env), peak.GFLOPs, peak.N)
		machinePeak = max(machinePeak, peak.GFLOPs)
	}
	fmt.Fprintf(stdout, "Go side GEMM: %.1f GFLOP/s (one %d^3 Linear op on the TapeMachine, best of every round); sgemm peak of this machine: %.1f GFLOP/s\n",
		goPeak, peakN, machinePeak)
	printTable(stdout, rows, opts, machinePeak)
	return nil
}

// defaultSteps lists each size's default timed steps: "S 200, M 10, ...".
func defaultSteps() string {
	var each []string
	for _, s := range sizes {
		each = append(each, fmt.Sprintf("%s %d", s.Name, s.Steps))
	}
	return strings.Join(each, ", ")
}

func coreNote(env []string) string {
	if len(env) == 0 {
		return "OpenBLAS's own detection"
	}
	return strings.Join(env, " ")
}

// runGoPeak measures the Go side's GEMM rate in a worker process.
func runGoPeak(exe string, env []string) (float64, error) {
	out, _, err := runChild(exe, []string{"-worker", "peak"}, env)
	if err != nil {
		return 0, errors.Wrap(err, "Go GEMM peak worker")
	}
	var p struct {
		GFLOPs float64 `json:"gflops"`
	}
	if err := json.Unmarshal(out, &p); err != nil {
		return 0, errors.Wrapf(err, "Go GEMM peak worker printed %q", out)
	}
	return p.GFLOPs, nil
}

func (r *row) runGo(exe string, opts options) error {
	args := []string{"-worker", r.size.Name, "-path", string(r.path), "-reps", fmt.Sprint(opts.reps),
		"-steps", fmt.Sprint(opts.steps), "-warmup", fmt.Sprint(opts.warmup)}
	out, rss, err := runChild(exe, args, opts.env)
	if err != nil {
		return errors.Wrapf(err, "Go worker for %s on the %s path", r.size.Name, r.path)
	}
	var res workerResult
	if err := json.Unmarshal(out, &res); err != nil {
		return errors.Wrapf(err, "Go worker for %s printed %q", r.size.Name, out)
	}
	n := float64(len(r.goRes.rates) / max(1, opts.reps))
	r.goRes.bytes = (r.goRes.bytes*n + res.BytesPerStep) / (n + 1)
	r.goRes.allocs = (r.goRes.allocs*n + res.AllocsPerStep) / (n + 1)
	r.goRes.add(res.StepsPerS, rss, res.CPUPerWall, res.FinalLoss)
	return nil
}

// torchResult is the part of torch_ref.py's JSON line the table uses.
type torchResult struct {
	Rates      []float64 `json:"steps_per_s_all"`
	CPUPerWall float64   `json:"cpu_per_wall"`
	FinalLoss  float64   `json:"final_loss"`
	BLASOK     bool      `json:"blas_ok"`
	BLASLibs   []string  `json:"blas_libs"`
}

func (r *row) runTorch(threads torchThreads, opts options) error {
	args := []string{opts.torch, "--config", r.size.Name, "--threads", fmt.Sprint(threads.torch),
		"--blas-threads", fmt.Sprint(threads.blas), "--reps", fmt.Sprint(opts.reps)}
	if opts.steps > 0 {
		args = append(args, "--steps", fmt.Sprint(opts.steps))
	}
	if opts.warmup > 0 {
		args = append(args, "--warmup", fmt.Sprint(opts.warmup))
	}
	out, rss, err := runChild(opts.python, args, opts.env)
	if err != nil {
		return errors.Wrapf(err, "torch_ref.py for %s, threads %v", r.size.Name, threads)
	}
	var res torchResult
	if err := json.Unmarshal(out, &res); err != nil {
		return errors.Wrapf(err, "torch_ref.py printed %q", out)
	}
	if !res.BLASOK {
		return errors.Errorf("torch runs without OpenBLAS (loaded: %v): the comparison would be invalid; %s", res.BLASLibs, installHint)
	}
	m := r.torch[threads]
	if m == nil {
		m = &measurement{}
		r.torch[threads] = m
	}
	m.add(res.Rates, rss, res.CPUPerWall, res.FinalLoss)
	return nil
}

// runChild runs a command and returns its stdout and its peak RSS in bytes;
// its stderr is kept for the error message.
func runChild(name string, args, env []string) ([]byte, int64, error) {
	cmd := exec.Command(name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	if err := cmd.Run(); err != nil {
		return nil, 0, errors.Wrapf(err, "%s %s: %s", name, strings.Join(args, " "), strings.TrimSpace(stderr.String()))
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss * 1024 // Linux reports kilobytes
	}
	return bytes.TrimSpace(stdout.Bytes()), rss, nil
}

const installHint = "install it with: apt-get install python3-torch libopenblas0-pthread"

// sgemmPeak is PyTorch's (OpenBLAS's) measured single-precision GEMM rate.
type sgemmPeak struct {
	GFLOPs   float64 `json:"gflops"`
	N        int     `json:"n"`
	OpenBLAS bool    `json:"openblas"`
	Core     string  `json:"core"`
	Torch    string  `json:"torch"`
}

// peakScript imports torch, checks that OpenBLAS is what it multiplies with
// (Debian's torch reaches BLAS through the libblas.so.3 alternative, so the
// loaded libraries tell), asks OpenBLAS which kernel set it chose, and times
// a 2048^3 sgemm on 2 threads (best of 5).
const peakScript = `
import ctypes, json, os, time
os.environ["OPENBLAS_NUM_THREADS"] = "2"
import torch
torch.set_num_threads(2)
n = 2048
a, b = torch.randn(n, n), torch.randn(n, n)
(a @ b).sum().item()
libs = sorted(set(l.split()[-1] for l in open("/proc/self/maps") if "blas" in l.lower()))
core = "unknown"
for lib in libs:
    if "openblas" in lib.lower():
        try:
            f = ctypes.CDLL(lib).openblas_get_corename
            f.restype = ctypes.c_char_p
            core = f().decode()
        except (OSError, AttributeError):
            pass
best = 0.0
for _ in range(5):
    t = time.perf_counter(); c = a @ b; dt = time.perf_counter() - t
    best = max(best, 2 * n**3 / dt / 1e9)
print(json.dumps({"gflops": best, "n": n, "openblas": any("openblas" in l.lower() for l in libs), "core": core, "torch": torch.__version__}))
`

// checkTorch verifies the PyTorch side's prerequisites and measures the
// sgemm peak while at it.
func checkTorch(python, script string, env []string) (*sgemmPeak, error) {
	if _, err := os.Stat(python); err != nil {
		return nil, errors.Errorf("%s not found (%v); %s, or pass -python", python, err, installHint)
	}
	if _, err := os.Stat(script); err != nil {
		return nil, errors.Errorf("%s not found: run from the repository root or pass -torch", script)
	}
	out, _, err := runChild(python, []string{"-c", peakScript}, env)
	if err != nil {
		if strings.Contains(err.Error(), "No module named") {
			return nil, errors.Errorf("%s cannot import torch; %s", python, installHint)
		}
		return nil, errors.Wrap(err, "measuring the sgemm peak")
	}
	var p sgemmPeak
	if err := json.Unmarshal(out, &p); err != nil {
		return nil, errors.Wrapf(err, "sgemm peak script printed %q", out)
	}
	if !p.OpenBLAS {
		return nil, errors.Errorf("torch %s is not running on OpenBLAS (the reference BLAS is ~6x slower, the comparison would be invalid); %s", p.Torch, installHint)
	}
	return &p, nil
}

// loadAvg is the 1-minute load average, or -1 if unknown.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	var l float64
	if _, err := fmt.Sscan(string(b), &l); err != nil {
		return -1
	}
	return l
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
