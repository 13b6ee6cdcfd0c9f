package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/layers"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/train"
)

// size is one benchmark configuration, the same as torch_ref.py's CONFIGS.
// Layers == 1 and DFF == 0 is the attention-only lesson model (x = x +
// attn(x)); DFF > 0 makes full pre-LN blocks with a GELU MLP of width DFF and
// a final LayerNorm; Llama makes them Llama-style blocks.
type size struct {
	Name                            string
	Batch, SeqLen, DModel, Heads, V int
	Layers, DFF                     int
	Steps                           int // default timed steps per repetition (torch_ref.py's DEFAULT_STEPS)
	// Base names the size a variant of the attention family is measured
	// against; "" for the plain sizes. torch_ref.py runs the plain sizes
	// and the Llama-style one, not the attention variants (onTorch).
	Base string
	// The variant's model keys (see model.Config).
	Position                  string
	KVHeads, Window, KVLatent int
	// Llama makes the blocks Llama's: RMSNorm, a SwiGLU MLP of width DFF,
	// no biases, the LM head tied to the token embedding (with Position
	// rope and KVHeads for the rest of the Llama-style block).
	Llama bool
	// NanoGPT is a pretrained model's shape fine-tuned as nanoGPT's
	// train.py does: the LM head tied to the token embedding, AdamW with
	// weight decay 0.1 at a fine-tuning learning rate (torch_ref.py's
	// NANOGPT), where the toy sizes take Adam at 3e-3 without decay.
	NanoGPT bool
}

// onTorch reports whether torch_ref.py has the size.
func (s size) onTorch() bool { return s.Base == "" || s.Llama }

var sizes = []size{
	{Name: "S", Batch: 32, SeqLen: 12, DModel: 32, Heads: 4, V: 64, Layers: 1, Steps: 200},
	{Name: "M", Batch: 64, SeqLen: 64, DModel: 128, Heads: 8, V: 64, Layers: 1, Steps: 10},
	// configs/sort.yaml's model and batch.
	{Name: "sort", Batch: 32, SeqLen: 16, DModel: 64, Heads: 4, V: 17, Layers: 2, DFF: 256, Steps: 50},
	{Name: "L4", Batch: 16, SeqLen: 64, DModel: 128, Heads: 8, V: 64, Layers: 4, DFF: 512, Steps: 5},
	// The attention family at M's sizes, each against M (learned positions,
	// multi-head): -configs M,M-rope,M-alibi,M-gqa,M-mqa,M-window,M-mla.
	{Name: "M-rope", Batch: 64, SeqLen: 64, DModel: 128, Heads: 8, V: 64, Layers: 1, Steps: 10, Base: "M", Position: "rope"},
	{Name: "M-alibi", Batch: 64, SeqLen: 64, DModel: 128, Heads: 8, V: 64, Layers: 1, Steps: 10, Base: "M", Position: "alibi"},
	{Name: "M-gqa", Batch: 64, SeqLen: 64, DModel: 128, Heads: 8, V: 64, Layers: 1, Steps: 10, Base: "M", KVHeads: 2},
	{Name: "M-mqa", Batch: 64, SeqLen: 64, DModel: 128, Heads: 8, V: 64, Layers: 1, Steps: 10, Base: "M", KVHeads: 1},
	{Name: "M-window", Batch: 64, SeqLen: 64, DModel: 128, Heads: 8, V: 64, Layers: 1, Steps: 10, Base: "M", Window: 16},
	{Name: "M-mla", Batch: 64, SeqLen: 64, DModel: 128, Heads: 8, V: 64, Layers: 1, Steps: 10, Base: "M", KVLatent: 32},
	// L4 with the Llama-style block, its MLP 2/3 as wide (model.DefaultDFF:
	// 352): against L4, and against PyTorch (-configs L4,L4-llama).
	{Name: "L4-llama", Batch: 16, SeqLen: 64, DModel: 128, Heads: 8, V: 64, Layers: 4, DFF: 352, Steps: 5, Base: "L4",
		Position: "rope", KVHeads: 2, Llama: true},
	// GPT-2 small's and medium's shapes at configs/finetune.yaml's batch
	// (issue 50: peak RSS and tokens/s of fine-tuning beside nanoGPT's).
	{Name: "gpt2", Batch: 4, SeqLen: 64, DModel: 768, Heads: 12, V: 50257, Layers: 12, DFF: 3072, Steps: 3, NanoGPT: true},
	{Name: "gpt2-medium", Batch: 4, SeqLen: 64, DModel: 1024, Heads: 16, V: 50257, Layers: 24, DFF: 4096, Steps: 2, NanoGPT: true},
}

// sizeNames lists the configurations for error messages.
func sizeNames() string {
	var names []string
	for _, s := range sizes {
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}

// modelConfig is the attnscope model of the size: the biases are those of
// torch_ref.py (QKV without, attention output with, LM head without),
// written with the ops of path.
func (s size) modelConfig(path layers.Path) model.Config {
	c := model.Config{Vocab: s.V, Context: s.SeqLen, DModel: s.DModel, Heads: s.Heads, Layers: s.Layers,
		MLP: s.DFF > 0, DFF: s.DFF, OutBias: true, Attention: string(path),
		Position: s.Position, KVHeads: s.KVHeads, Window: s.Window, KVLatent: s.KVLatent}
	if s.Llama {
		c.Norm, c.Activation, c.MLPBias, c.OutBias, c.TieEmbeddings = model.NormRMS, model.ActivationSwiGLU, model.FlagOff, false, true
	}
	c.TieEmbeddings = c.TieEmbeddings || s.NanoGPT
	return c
}

// describe is the size in one line: "B32 T16 D64 H4 L2 V17 d_ff 256,
// pre-LN blocks with MLP" and the blocks' or attention's variant.
func (s size) describe() string {
	text := fmt.Sprintf("B%d T%d D%d H%d L%d V%d", s.Batch, s.SeqLen, s.DModel, s.Heads, s.Layers, s.V)
	c := s.modelConfig(layers.Fused)
	if s.DFF > 0 {
		text += fmt.Sprintf(" d_ff %d", s.DFF)
	}
	text += ", " + c.Blocks()
	if family := c.Family(); family != "" {
		text += ", " + family
	}
	return text
}

func sizeNamed(name string) (size, error) {
	for _, s := range sizes {
		if s.Name == name {
			return s, nil
		}
	}
	return size{}, errors.Errorf("unknown config %q (want one of %s)", name, sizeNames())
}

// stepFLOPs is the nominal floating-point work of one training step: the
// matrix products only (2 flops per multiply-add), dense (the causal upper
// triangle counted, as PyTorch computes it), backward = 2 x forward.
// Forward, per layer: QKV 2N*D*(D + 2*G*d) (3D wide for multi-head), out
// 2N*D*D, MLP 2N*D*F twice (three times for SwiGLU), q k^T and a v
// 2*B*T*T*D each; then the LM head 2N*D*V; with N = B*T.
func (s size) stepFLOPs() float64 {
	n, d, v, f := float64(s.Batch*s.SeqLen), float64(s.DModel), float64(s.V), float64(s.DFF)
	t, b := float64(s.SeqLen), float64(s.Batch)
	c := s.modelConfig(layers.Fused)
	qkv := d + 2*float64(c.KVHeadCount()*c.DHead())
	matrices := 2.0
	if s.Llama {
		matrices = 3
	}
	layer := 2*n*d*(qkv+d+matrices*f) + 2*2*b*t*t*d
	fwd := float64(s.Layers)*layer + 2*n*d*v
	return 3 * fwd
}

// workerResult is what one Go worker process prints (one JSON line).
type workerResult struct {
	Config        string    `json:"config"`
	StepsPerS     []float64 `json:"steps_per_s_all"`
	Median        float64   `json:"steps_per_s_median"`
	BytesPerStep  float64   `json:"bytes_per_step"`
	AllocsPerStep float64   `json:"allocs_per_step"`
	CPUPerWall    float64   `json:"cpu_per_wall"`
	FinalLoss     float64   `json:"final_loss"`
	BLAS          string    `json:"blas"`
	GOMAXPROCS    int       `json:"gomaxprocs"`
}

// goTrainer is one training step of the benchmark model as train.Run takes it:
// feed a batch, forward and backward on the reused machines of the batch's
// parts (train.Replicas), read the gradients, Adam update (lr 3e-3, no
// clipping and no weight decay, as torch_ref.py; AdamW for the NanoGPT sizes), reset the machines.
type goTrainer struct {
	m       *model.Model
	g       *train.Replicas
	adam    *train.Adam
	tokens  [][]int
	targets [][]int
	mask    []float64
	lr      float64
}

// learningRate and weightDecay are the optimizer's, as torch_ref.py sets
// them: AdamW at a fine-tuning rate for the NanoGPT sizes.
func (s size) learningRate() float64 {
	if s.NanoGPT {
		return 3e-5
	}
	return 3e-3
}

func (s size) weightDecay() float64 {
	if s.NanoGPT {
		return 0.1
	}
	return 0
}

// moments is the dtype of Adam's moments a run of this size keeps by
// default (train.moments): float32 when it fine-tunes a pretrained shape, as
// PyTorch does, float64 for a lab run.
func (s size) moments() tensor.Dtype {
	if s.NanoGPT {
		return tensor.Float32
	}
	return tensor.Float64
}

func newGoTrainer(s size, path layers.Path, batches int, seed uint64) (*goTrainer, error) {
	m, err := model.New(s.modelConfig(path), tensor.Float32, seed)
	if err != nil {
		return nil, err
	}
	g, err := train.BuildReplicas(m, s.Batch, s.SeqLen)
	if err != nil {
		return nil, err
	}
	tr := &goTrainer{m: m, g: g, adam: train.NewAdam(m.Params, s.moments(), 0.9, 0.999, 1e-8, s.weightDecay()), lr: s.learningRate()}
	n := s.Batch * s.SeqLen
	rng := rand.New(rand.NewPCG(seed, 2))
	for range batches {
		tok, tgt := make([]int, n), make([]int, n)
		for i := range tok {
			tok[i], tgt[i] = rng.IntN(s.V), rng.IntN(s.V)
		}
		tr.tokens, tr.targets = append(tr.tokens, tok), append(tr.targets, tgt)
	}
	tr.mask = make([]float64, n)
	for i := range tr.mask {
		tr.mask[i] = 1
	}
	return tr, nil
}

// measureGo runs warmup untimed steps, then reps repetitions of steps timed
// steps, on one machine, and reports the rates and the allocation per step.
func measureGo(s size, path layers.Path, steps, warmup, reps int) (*workerResult, error) {
	tr, err := newGoTrainer(s, path, warmup+reps*steps, 1)
	if err != nil {
		return nil, err
	}
	defer tr.g.Close()
	i := 0
	var loss float64
	step := func() error {
		defer tr.g.Reset()
		if err := tr.g.Feed(tr.tokens[i], tr.targets[i], tr.mask); err != nil {
			return err
		}
		i++
		if err := tr.g.RunAll(); err != nil {
			return err
		}
		grads, err := tr.g.Gradients()
		if err != nil {
			return err
		}
		if loss, err = tr.g.LossValue(); err != nil {
			return err
		}
		return tr.adam.Update(tr.m.Params, grads, tr.lr)
	}
	for range warmup {
		if err := step(); err != nil {
			return nil, errors.Wrap(err, "warmup step")
		}
	}
	res := &workerResult{Config: s.Name, BLAS: kernels.Backend(), GOMAXPROCS: runtime.GOMAXPROCS(0)}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0, wall0 := cpuTime(), time.Now()
	for range reps {
		start := time.Now()
		for range steps {
			if err := step(); err != nil {
				return nil, errors.Wrap(err, "timed step")
			}
		}
		res.StepsPerS = append(res.StepsPerS, float64(steps)/time.Since(start).Seconds())
	}
	res.CPUPerWall = (cpuTime() - cpu0).Seconds() / time.Since(wall0).Seconds()
	runtime.ReadMemStats(&after)
	total := float64(steps * reps)
	res.BytesPerStep = float64(after.TotalAlloc-before.TotalAlloc) / total
	res.AllocsPerStep = float64(after.Mallocs-before.Mallocs) / total
	res.Median = median(res.StepsPerS)
	res.FinalLoss = loss
	return res, nil
}

// runWorker is the body of a worker process: one measurement, one JSON line.
func runWorker(name string, path layers.Path, steps, warmup, reps int, stdout io.Writer) error {
	s, err := sizeNamed(name)
	if err != nil {
		return err
	}
	if steps == 0 {
		steps = s.Steps
	}
	if warmup == 0 {
		warmup = steps
	}
	res, err := measureGo(s, path, steps, warmup, reps)
	if err != nil {
		return errors.Wrapf(err, "config %s, %s path", name, path)
	}
	return json.NewEncoder(stdout).Encode(res)
}

// cpuTime is the user + system time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakN is the size of the square product runPeakWorker times.
const peakN = 2048

// runPeakWorker times the Go side's float32 GEMM the way the model uses it:
// one Linear op (y = x W^T, no bias) of peakN x peakN x peakN on a
// TapeMachine, best of 5 runs after one warm-up, and prints its GFLOP/s.
func runPeakWorker(stdout io.Writer) error {
	rng := rand.New(rand.NewPCG(3, 4))
	fill := func() *tensor.Dense {
		v := make([]float32, peakN*peakN)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return tensor.New(tensor.WithShape(peakN, peakN), tensor.WithBacking(v))
	}
	g := gorgonia.NewGraph()
	lin, err := layers.NewLinear(layers.NewParam(g, "w", fill()), nil)
	if err != nil {
		return err
	}
	if _, err := lin.Forward(layers.NewParam(g, "x", fill())); err != nil {
		return err
	}
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	best := 0.0
	for i := range 6 {
		start := time.Now()
		if err := vm.RunAll(); err != nil {
			return err
		}
		rate := 2 * math.Pow(peakN, 3) / time.Since(start).Seconds() / 1e9
		vm.Reset()
		if i > 0 {
			best = max(best, rate)
		}
	}
	return json.NewEncoder(stdout).Encode(map[string]float64{"gflops": best})
}
