package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/generate"
	"github.com/attnscope/attnscope/model"
)

// llama2c is llama2.c's run.c compiled from a checkout into a temporary
// directory, beside a model file holding a Go model's weights and a
// tokenizer file whose token i prints as [i], so that what run.c
// generates reads back as ids. Nothing of llama2.c is kept or committed:
// the bench takes the checkout's path (-llama2c) and fetches nothing.
type llama2c struct {
	dir, exe, model, tokenizer string
	threads                    int // OMP_NUM_THREADS: every core
}

// llama2cBOS is the id run.c starts every generation from, and at which
// it stops (run.c's generate: "the BOS (=1) token delimits sequences").
const llama2cBOS = 1

// newLlama2c compiles checkout's run.c (gcc -Ofast -fopenmp -march=native,
// as llama2.c's Makefile builds runomp) and writes m's model and tokenizer
// files, all into a new temporary directory that Close removes.
func newLlama2c(checkout string, m *model.Model) (r *llama2c, err error) {
	if err := checkLlama2cCheckout(checkout); err != nil {
		return nil, err
	}
	src := filepath.Join(checkout, "run.c")
	dir, err := os.MkdirTemp("", "bench-llama2c-")
	if err != nil {
		return nil, errors.Wrap(err, "llama2.c")
	}
	r = &llama2c{dir: dir, exe: filepath.Join(dir, "run"), model: filepath.Join(dir, "model.bin"),
		tokenizer: filepath.Join(dir, "tokenizer.bin"), threads: runtime.NumCPU()}
	defer func() {
		if err != nil { // r is nil by then: the directory is removed by name
			os.RemoveAll(dir)
		}
	}()
	if out, err := exec.Command("gcc", "-Ofast", "-fopenmp", "-march=native", "-o", r.exe, src, "-lm").CombinedOutput(); err != nil {
		first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n") // one line: gcc's first complaint
		return nil, errors.Errorf("compiling %s: %v: %s", src, err, first)
	}
	if err := writeLlama2cFile(r.model, func(w *bufio.Writer) error { return writeLlama2cModel(w, m) }); err != nil {
		return nil, err
	}
	if err := writeLlama2cFile(r.tokenizer, func(w *bufio.Writer) error { return writeLlama2cTokenizer(w, m.Config.Vocab) }); err != nil {
		return nil, err
	}
	return r, nil
}

// checkLlama2cCheckout refuses a -llama2c directory without run.c, or a
// machine without gcc to compile it.
func checkLlama2cCheckout(checkout string) error {
	if _, err := os.Stat(filepath.Join(checkout, "run.c")); err != nil {
		return errors.Errorf("-llama2c %q: no run.c there (want a checkout of github.com/karpathy/llama2.c)", checkout)
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		return errors.Errorf("-llama2c %q: run.c is compiled with gcc, which is not on PATH (apt-get install gcc)", checkout)
	}
	return nil
}

// Close removes the temporary directory.
func (r *llama2c) Close() { os.RemoveAll(r.dir) }

// writeLlama2cFile creates path and writes it through write.
func writeLlama2cFile(path string, write func(*bufio.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return errors.Wrap(err, "llama2.c")
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = write(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return errors.Wrapf(err, "writing %s", path)
}

// achievedRate is run.c's report of its speed on stderr.
var achievedRate = regexp.MustCompile(`achieved tok/s: ([0-9.]+)`)

// generated are the ids run.c printed, each as its token's piece [id].
var generated = regexp.MustCompile(`\[([0-9]+)\]`)

// run has run.c generate greedily (-t 0) from BOS for steps positions on
// every core, and returns the tokens/s it reports (over the steps after
// the first) and the ids it generated.
func (r *llama2c) run(steps int) (rate float64, ids []int, err error) {
	cmd := exec.Command(r.exe, r.model, "-z", r.tokenizer, "-t", "0", "-n", strconv.Itoa(steps))
	cmd.Env = append(os.Environ(), fmt.Sprintf("OMP_NUM_THREADS=%d", r.threads))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, nil, errors.Errorf("run.c: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	match := achievedRate.FindStringSubmatch(stderr.String())
	if match == nil {
		return 0, nil, errors.Errorf("run.c reported no speed (stderr %q)", stderr.String())
	}
	rate, err = strconv.ParseFloat(match[1], 64)
	if err != nil {
		return 0, nil, errors.Wrapf(err, "run.c's speed %q", match[1])
	}
	for _, id := range generated.FindAllStringSubmatch(string(out), -1) {
		n, _ := strconv.Atoi(id[1]) // the pattern's digits, written by writeLlama2cTokenizer
		ids = append(ids, n)
	}
	return rate, ids, nil
}

// greedyFromBOS is what m generates greedily from BOS over steps
// positions, stopping after BOS as run.c does (without it).
func greedyFromBOS(m *model.Model, steps int) ([]int, error) {
	st, err := generate.New(m, 1, steps, true)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	s, err := generate.NewSampler(generate.Greedy)
	if err != nil {
		return nil, err
	}
	out, err := generate.StreamUntil(st, [][]int{{llama2cBOS}}, []int{steps}, s, m.Config.Vocab, []int{llama2cBOS}, nil)
	if err != nil {
		return nil, err
	}
	ids := out[0]
	if len(ids) > 0 && ids[len(ids)-1] == llama2cBOS {
		ids = ids[:len(ids)-1]
	}
	return ids, nil
}

// commonPrefix is how many leading ids a and b share.
func commonPrefix(a, b []int) int {
	n := 0
	for n < min(len(a), len(b)) && a[n] == b[n] {
		n++
	}
	return n
}

// writeLlama2cModel writes m in the layout run.c reads (read_checkpoint
// and memory_map_weights, llama2.c's "legacy" version 0 file): the header
// of seven int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
// vocab_size, negative when the head has weights of its own, seq_len), then
// float32 tensors, each stacked over the layers: the token embedding,
// rms_att, wq, wk, wv, wo, rms_ffn, w1 (gate), w2 (down), w3 (up),
// rms_final, two unused tables of seq_len x head_size/2 (run.c skips them)
// and, untied, the head. run.c turns pairs of channels (2i, 2i+1) (Meta's
// rotary layout) where the Go model turns (i, i+d/2) (rotate-half), so wq
// and wk are written with each head's rows interleaved: row 2i from row i,
// row 2i+1 from row i+d/2, which inverts Hugging Face's conversion of
// Meta's checkpoints and gives the same attention.
func writeLlama2cModel(w *bufio.Writer, m *model.Model) error {
	c := m.Config
	if err := checkLlama2cConfig(c); err != nil {
		return err
	}
	if m.Dtype != tensor.Float32 {
		return errors.Errorf("llama2.c's run.c reads float32 weights, not %v", m.Dtype)
	}
	d, kv := c.DHead(), c.KVHeadCount()
	vocab := int32(c.Vocab)
	if !c.TieEmbeddings {
		vocab = -vocab
	}
	header := []int32{int32(c.DModel), int32(c.DFF), int32(c.Layers), int32(c.Heads), int32(kv), vocab, int32(c.Context)}
	if err := binary.Write(w, binary.LittleEndian, header); err != nil {
		return err
	}
	param := func(name string) []float32 { return m.Param(name).Float32s() }
	perLayer := func(part func(l int) []float32) {
		for l := range c.Layers {
			writeFloat32s(w, part(l))
		}
	}
	block := func(l int, name string) []float32 { return param(fmt.Sprintf("blocks.%d.%s.weight", l, name)) }
	qkvRows := func(l, from, rows int) []float32 { return block(l, "attn.qkv")[from*c.DModel : (from+rows)*c.DModel] }
	writeFloat32s(w, param("tok_emb.weight"))
	perLayer(func(l int) []float32 { return block(l, "ln1") })
	perLayer(func(l int) []float32 { return interleaveRotary(qkvRows(l, 0, c.DModel), d, c.DModel) })
	perLayer(func(l int) []float32 { return interleaveRotary(qkvRows(l, c.DModel, kv*d), d, c.DModel) })
	perLayer(func(l int) []float32 { return qkvRows(l, c.DModel+kv*d, kv*d) })
	perLayer(func(l int) []float32 { return block(l, "attn.out") })
	perLayer(func(l int) []float32 { return block(l, "ln2") })
	for _, name := range []string{"mlp.gate", "mlp.down", "mlp.up"} {
		perLayer(func(l int) []float32 { return block(l, name) })
	}
	writeFloat32s(w, param("ln_f.weight"))
	writeFloat32s(w, make([]float32, c.Context*d)) // freq_cis_real and freq_cis_imag, seq_len x d/2 each
	if !c.TieEmbeddings {
		writeFloat32s(w, param("lm_head.weight"))
	}
	return nil
}

// checkLlama2cConfig refuses a model run.c would not compute as the Go
// model does: run.c's block is Llama's (RMSNorm at eps 1e-5, SwiGLU, rotary
// positions at base 10000 on every channel, no bias, no QK-norm), in
// float32.
func checkLlama2cConfig(c model.Config) error {
	eps := c.NormEps
	if eps == 0 {
		eps = model.DefaultNormEps
	}
	base := c.RopeBase
	if base == 0 {
		base = model.DefaultRopeBase
	}
	llama := c.MLP && c.Norm == model.NormRMS && eps == 1e-5 && c.Activation == model.ActivationSwiGLU && !c.MLPBias.On() &&
		c.PositionKind() == model.PositionRope && base == 10000 && !c.QKVBias && !c.OutBias && !c.LMBias && !c.QKNorm &&
		c.KVLatent == 0 && c.Window == 0
	llama = llama && c.PlacementKind() == model.PlacementPre && !c.NormOffset && !c.ParallelResidual // run.c's norms sit before each sublayer, scale by w
	if !llama {
		return errors.Errorf("llama2.c's run.c computes Llama's block (RMSNorm eps 1e-5, SwiGLU, rope base 10000, no biases), not this model's %+v", c)
	}
	return nil
}

// interleaveRotary is w's rows (heads of d rows, each row width wide)
// reordered within each head: row 2i is row i, row 2i+1 is row i+d/2.
func interleaveRotary(w []float32, d, width int) []float32 {
	out := make([]float32, len(w))
	for head := 0; head < len(w)/(d*width); head++ {
		for i := 0; i < d/2; i++ {
			for half := range 2 {
				from, to := head*d+i+half*d/2, head*d+2*i+half
				copy(out[to*width:(to+1)*width], w[from*width:(from+1)*width])
			}
		}
	}
	return out
}

// writeFloat32s writes xs little-endian; the writer keeps the first error
// and returns it at Flush.
func writeFloat32s(w *bufio.Writer, xs []float32) {
	var b [4]byte
	for _, x := range xs {
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(x))
		w.Write(b[:])
	}
}

// writeLlama2cTokenizer writes a tokenizer in run.c's format
// (build_tokenizer: the longest piece's length as int32, then per token a
// float32 score, an int32 length and the piece's bytes) whose token i is
// the piece [i]: run.c's output then reads back as the ids it generated.
func writeLlama2cTokenizer(w *bufio.Writer, vocab int) error {
	longest := int32(len(fmt.Sprintf("[%d]", vocab-1)))
	if err := binary.Write(w, binary.LittleEndian, longest); err != nil {
		return err
	}
	for i := range vocab {
		piece := fmt.Sprintf("[%d]", i)
		binary.Write(w, binary.LittleEndian, float32(0))
		binary.Write(w, binary.LittleEndian, int32(len(piece)))
		w.WriteString(piece)
	}
	return nil
}

// prepareLlama2c readies run.c for a setting that times it: compiled from
// opts.llama2c with m's weights, and checked to generate greedily from BOS
// what m does (its first token at least: a file run.c reads otherwise
// would be timing another model). It returns nil and a notice when no
// checkout is given, and a line saying how far the two agree.
func prepareLlama2c(opts options, s decodeSetting, m *model.Model, stderr io.Writer) (*llama2c, string, error) {
	if !s.llama2c {
		return nil, "", nil
	}
	if opts.llama2c == "" {
		notice := "run.c: skipped, -llama2c names no checkout of github.com/karpathy/llama2.c (the bench fetches nothing)"
		fmt.Fprintln(stderr, notice)
		return nil, notice, nil
	}
	fmt.Fprintf(stderr, "llama2.c: compiling %s/run.c, writing the model file\n", opts.llama2c)
	r, err := newLlama2c(opts.llama2c, m)
	if err != nil {
		return nil, "", err
	}
	length := s.lengths[0]
	_, theirs, err := r.run(length)
	if err == nil {
		var ours []int
		if ours, err = greedyFromBOS(m, length); err == nil && commonPrefix(ours, theirs) == 0 {
			err = errors.Errorf("run.c does not compute the Go model: from BOS it generated %v, Go %v", theirs[:min(4, len(theirs))], ours[:min(4, len(ours))])
		}
		if err == nil {
			return r, fmt.Sprintf("run.c (gcc -Ofast -fopenmp -march=native, OMP_NUM_THREADS=%d) on the same weights: from BOS it generated %d tokens greedily, the first %d of them Go's",
				r.threads, len(theirs), commonPrefix(ours, theirs)), nil
		}
	}
	r.Close()
	return nil, "", err
}

// runLlama2c times reps generations of the row's length on run.c.
func (row *decodeRow) runLlama2c(r *llama2c, reps int) error {
	for range reps {
		rate, _, err := r.run(row.length)
		if err != nil {
			return err
		}
		row.runc = append(row.runc, rate)
	}
	row.runcThreads = r.threads
	return nil
}
