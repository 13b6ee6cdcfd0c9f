package ops

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/safetensors"
)

// storedBits are n random finite elements of dtype, little-endian.
func storedBits(rng *rand.Rand, dtype string, n int) []byte {
	b := make([]byte, 2*n)
	for i := range n {
		var h uint16
		switch dtype {
		case safetensors.BF16:
			h = uint16(math.Float32bits(float32(rng.NormFloat64())) >> 16)
		case safetensors.F16: // any sign and mantissa, an exponent short of all ones: subnormals included
			h = uint16(rng.IntN(1<<16)) &^ (1 << 14)
		}
		binary.LittleEndian.PutUint16(b[2*i:], h)
	}
	return b
}

// storedOf is a (rows, cols) Stored of data, cut into parts of the given
// rows.
func storedOf(name, dtype string, cols int, data []byte, parts ...int) *Stored {
	s := &Stored{Name: name, Cols: cols, DType: dtype}
	for _, rows := range parts {
		n := rows * cols * 2
		s.Parts = append(s.Parts, StoredPart{Rows: rows, Data: data[:n], File: "test.safetensors"})
		s.Rows, data = s.Rows+rows, data[n:]
	}
	return s
}

func runGraph(t *testing.T, g *gorgonia.ExprGraph) error {
	t.Helper()
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	return vm.RunAll()
}

// TestLinearStoredIsLinearWidened: a BF16 or F16 weight read in place, in
// parts, gives Linear's output on the same weight widened to float32 bit
// for bit, for the GEMV's row counts and the GEMM's, across several of
// LinearStored's row blocks and with an odd width; and an embedding the
// widened table's rows.
func TestLinearStoredIsLinearWidened(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 1))
	const in, out = 1001, 150 // 65 rows a block: three blocks, the last short
	for _, dtype := range []string{safetensors.BF16, safetensors.F16} {
		raw := storedBits(rng, dtype, out*in)
		w := storedOf("w", dtype, in, raw, 40, 70, 40)
		widened := make([]float32, out*in)
		safetensors.Widen(widened, raw, dtype)
		bias := make([]float32, out)
		for i := range bias {
			bias[i] = float32(rng.NormFloat64())
		}
		for _, n := range []int{1, 3, 7, 20} {
			xs := make([]float32, n*in)
			for i := range xs {
				xs[i] = float32(rng.NormFloat64())
			}
			g := gorgonia.NewGraph()
			x := f32Input(g, "x", xs, n, in)
			b := f32Input(g, "b", bias, out)
			wNode := f32Input(g, "w", widened, out, in)
			want := must(t)(Linear(x, wNode, b))
			got := must(t)(LinearStored(x, w, b))
			ids := gorgonia.NewTensor(g, tensor.Int, 1, gorgonia.WithShape(3), gorgonia.WithName("ids"),
				gorgonia.WithValue(tensor.New(tensor.WithBacking([]int{0, out - 1, 41}))))
			rows := must(t)(EmbeddingStored(w, ids))
			if err := runGraph(t, g); err != nil {
				t.Fatal(err)
			}
			if a, b := want.Value().Data().([]float32), got.Value().Data().([]float32); !sameBits(a, b) {
				t.Errorf("%s, %d rows: LinearStored differs from Linear on the widened weight", dtype, n)
			}
			gathered := rows.Value().Data().([]float32)
			for i, id := range []int{0, out - 1, 41} {
				if !sameBits(gathered[i*in:(i+1)*in], widened[id*in:(id+1)*in]) {
					t.Errorf("%s: EmbeddingStored row %d is not the widened table's row %d", dtype, i, id)
				}
			}
		}
	}
}

// TestStoredFaultIsAnError truncates the file a weight is mapped from and
// runs a product over it: one line naming the weight and the file, not a
// SIGBUS that ends the process, whether the GEMV reads the weight on the
// caller's goroutine alone (64x64) or on the kernels' helpers too (the
// fault is raised again on the caller).
func TestStoredFaultIsAnError(t *testing.T) {
	for _, size := range []int{64, 512} {
		t.Run(fmt.Sprint(size), func(t *testing.T) { testStoredFault(t, size, size) })
	}
}

func testStoredFault(t *testing.T, in, out int) {
	rng := rand.New(rand.NewPCG(47, 2))
	raw := storedBits(rng, safetensors.BF16, in*out)
	path := filepath.Join(t.TempDir(), "w.safetensors")
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, []safetensors.Tensor{{Name: "w", DType: safetensors.BF16, Shape: []int{out, in}, Data: raw}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Open(path, safetensors.MaxFileLen)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := f.Map()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	mapped, _, err := m.Bytes("w")
	if err != nil {
		t.Fatal(err)
	}
	w := storedOf("blocks.0.attn.qkv.weight", safetensors.BF16, in, mapped, out)
	g := gorgonia.NewGraph()
	x := f32Input(g, "x", make([]float32, in), 1, in)
	y := must(t)(LinearStored(x, w, nil))
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatalf("before the truncation: %v", err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	vm.Reset()
	err = vm.RunAll()
	if err == nil || !strings.Contains(err.Error(), "truncated or replaced") || !strings.Contains(err.Error(), "blocks.0.attn.qkv.weight") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("after the truncation: %v; want one line naming the weight and the truncation", err)
	}
	_ = y
}

func f32Input(g *gorgonia.ExprGraph, name string, values []float32, shape ...int) *gorgonia.Node {
	return gorgonia.NewTensor(g, tensor.Float32, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name),
		gorgonia.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(values))))
}

func must(t *testing.T) func(*gorgonia.Node, error) *gorgonia.Node {
	return func(n *gorgonia.Node, err error) *gorgonia.Node {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// TestStoredFirstNonFinite finds the first infinity or NaN of each dtype
// wherever it sits (at every element: in each lane of a 32-byte step, in
// the tail after the steps, in either part), against a plain loop over
// the widened values.
func TestStoredFirstNonFinite(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 3))
	const rows, cols = 9, 7
	for _, dtype := range []string{safetensors.BF16, safetensors.F16} {
		for at := -1; at < rows*cols; at++ {
			raw := storedBits(rng, dtype, rows*cols)
			if at >= 0 {
				bad := map[string]uint16{safetensors.BF16: 0xff80, safetensors.F16: 0x7e01}[dtype] // -Inf, a NaN
				binary.LittleEndian.PutUint16(raw[2*at:], bad)
				binary.LittleEndian.PutUint16(raw[2*(at+1)%len(raw):], bad)
			}
			widened := make([]float32, rows*cols)
			safetensors.Widen(widened, raw, dtype)
			want := -1
			for i, v := range widened {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					want = i
					break
				}
			}
			row, col, err := storedOf("w", dtype, cols, raw, 4, 5).FirstNonFinite()
			if got := row*cols + col; err != nil || (want < 0) != (row < 0) || want >= 0 && got != want {
				t.Errorf("%s, bad at %d: FirstNonFinite = (%d, %d), %v; want flat %d", dtype, at, row, col, err, want)
			}
		}
	}
}
