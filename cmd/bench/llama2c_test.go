package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/model"
)

// TestLlama2cModelFile: the model file is laid out as run.c's
// read_checkpoint and memory_map_weights read it: seven int32 of header
// (vocab negative for a head of its own), then float32 tables in run.c's
// order, each stacked over the layers, wq and wk rows interleaved per head
// for run.c's rotary pairs (2i, 2i+1), the unused rotary tables, and the
// head last when untied; tied and untied, grouped-query heads and not.
func TestLlama2cModelFile(t *testing.T) {
	for _, tc := range []struct {
		untied  bool
		kvHeads int
	}{{false, 0}, {true, 2}} {
		t.Run(fmt.Sprintf("untied=%t,kv_heads=%d", tc.untied, tc.kvHeads), func(t *testing.T) {
			m := scaledModel(t, smallLlama(tc.untied, tc.kvHeads), 1)
			c := m.Config
			D, F, L, V, d, kv := c.DModel, c.DFF, c.Layers, c.Vocab, c.DHead(), c.KVHeadCount()*c.DHead()
			file := llama2cModelBytes(t, m)
			vocab := map[bool]int32{false: int32(V), true: -int32(V)}[tc.untied]
			header := make([]int32, 7)
			binary.Read(bytes.NewReader(file), binary.LittleEndian, header)
			if want := []int32{int32(D), int32(F), int32(L), int32(c.Heads), int32(c.KVHeadCount()), vocab, int32(c.Context)}; !slices.Equal(header, want) {
				t.Fatalf("header %v, want %v", header, want)
			}
			// run.c's memory_map_weights, table by table: its offset in floats.
			sizes := []struct {
				name string
				n    int
			}{{"tok", V * D}, {"rms_att", L * D}, {"wq", L * D * D}, {"wk", L * kv * D}, {"wv", L * kv * D}, {"wo", L * D * D},
				{"rms_ffn", L * D}, {"w1", L * F * D}, {"w2", L * D * F}, {"w3", L * F * D}, {"rms_final", D}, {"freqs", c.Context * d}, {"wcls", V * D}}
			at, offset := map[string][]float32{}, 7
			floats := fileFloats(file)
			for _, s := range sizes {
				if s.name == "wcls" && !tc.untied {
					break
				}
				if offset+s.n > len(floats)+7 {
					t.Fatalf("the file ends inside %s", s.name)
				}
				at[s.name], offset = floats[offset-7:offset-7+s.n], offset+s.n
			}
			if offset-7 != len(floats) {
				t.Fatalf("%d floats after the header, run.c reads %d", len(floats), offset-7)
			}
			qkv := func(l, row int) []float32 {
				return m.Param(fmt.Sprintf("blocks.%d.attn.qkv.weight", l)).Float32s()[row*D : (row+1)*D]
			}
			layer := func(name string, l, size int) []float32 { return at[name][l*size : (l+1)*size] }
			l, head := L-1, 1 // the last layer's second head: an offset wrong by a layer or a head shows
			checks := []struct {
				what      string
				got, want []float32
			}{
				{"token embedding", at["tok"], m.Param("tok_emb.weight").Float32s()},
				{"rms_att", layer("rms_att", l, D), m.Param(fmt.Sprintf("blocks.%d.ln1.weight", l)).Float32s()},
				{"wq row 2i", layer("wq", l, D*D)[(head*d+2)*D:][:D], qkv(l, head*d+1)},
				{"wq row 2i+1", layer("wq", l, D*D)[(head*d+3)*D:][:D], qkv(l, head*d+1+d/2)},
				{"wk row 2i+1", layer("wk", l, kv*D)[(head*d+1)*D:][:D], qkv(l, D+head*d+d/2)},
				{"wv", layer("wv", l, kv*D), m.Param(fmt.Sprintf("blocks.%d.attn.qkv.weight", l)).Float32s()[(D+kv)*D:]},
				{"wo", layer("wo", l, D*D), m.Param(fmt.Sprintf("blocks.%d.attn.out.weight", l)).Float32s()},
				{"rms_ffn", layer("rms_ffn", l, D), m.Param(fmt.Sprintf("blocks.%d.ln2.weight", l)).Float32s()},
				{"w1 (gate)", layer("w1", l, F*D), m.Param(fmt.Sprintf("blocks.%d.mlp.gate.weight", l)).Float32s()},
				{"w2 (down)", layer("w2", l, D*F), m.Param(fmt.Sprintf("blocks.%d.mlp.down.weight", l)).Float32s()},
				{"w3 (up)", layer("w3", l, F*D), m.Param(fmt.Sprintf("blocks.%d.mlp.up.weight", l)).Float32s()},
				{"rms_final", at["rms_final"], m.Param("ln_f.weight").Float32s()},
			}
			if tc.untied {
				checks = append(checks, struct {
					what      string
					got, want []float32
				}{"wcls", at["wcls"], m.Param("lm_head.weight").Float32s()})
			}
			for _, ch := range checks {
				if !slices.Equal(ch.got, ch.want) {
					t.Errorf("%s: the file holds other values", ch.what)
				}
			}
		})
	}
}

// TestLlama2cRefusesOtherBlocks: a model run.c would compute otherwise
// (a bias, another eps, GPT-2's block) is refused, not written.
func TestLlama2cRefusesOtherBlocks(t *testing.T) {
	biased, eps := smallLlama(false, 0), smallLlama(false, 0)
	biased.QKVBias, eps.NormEps = true, 1e-6
	sort, _ := decodeSettingNamed("sort")
	for _, c := range []model.Config{biased, eps, sort.config(12)} {
		m, err := model.New(c, tensor.Float32, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := writeLlama2cModel(bufio.NewWriter(&bytes.Buffer{}), m); err == nil {
			t.Errorf("%+v: written", c)
		}
	}
}

// TestLlama2cRunsTheGoModel: run.c, compiled from the checkout that
// LLAMA2C names (skipped without one: the repository holds no llama2.c),
// reads the file of a small Llama (tied; untied with grouped-query heads)
// and generates greedily from BOS the tokens the Go model does, all of
// them, through the tokenizer file's [id] pieces.
func TestLlama2cRunsTheGoModel(t *testing.T) {
	checkout := os.Getenv("LLAMA2C")
	if checkout == "" {
		t.Skip("LLAMA2C names no checkout of github.com/karpathy/llama2.c")
	}
	for _, untied := range []bool{false, true} {
		c := smallLlama(untied, map[bool]int{false: 0, true: 2}[untied])
		c.Context = 32
		// Weights wide enough that greedy decoding does not settle on one
		// token, so positions and rotary angles decide what comes next.
		m := shiftedModel(t, c, 12, 0)
		r, err := newLlama2c(checkout, m)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		steps := m.Config.Context
		_, theirs, err := r.run(steps)
		if err != nil {
			t.Fatal(err)
		}
		ours, err := greedyFromBOS(m, steps)
		if err != nil {
			t.Fatal(err)
		}
		if len(ours) < 3 || !slices.Equal(theirs, ours) {
			t.Errorf("untied %t: run.c generated %v, Go %v", untied, theirs, ours)
		}
		t.Logf("untied %t: %v", untied, ours)
	}
}

// llama2cModelBytes is m's llama2.c model file.
func llama2cModelBytes(t *testing.T, m *model.Model) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	if err := writeLlama2cModel(w, m); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// fileFloats are the float32 values after the 28-byte header.
func fileFloats(file []byte) []float32 {
	xs := make([]float32, (len(file)-28)/4)
	for i := range xs {
		xs[i] = math.Float32frombits(binary.LittleEndian.Uint32(file[28+4*i:]))
	}
	return xs
}

// TestLlama2cCompileError: a run.c that does not compile is one line of
// error naming the file and gcc's first complaint, and leaves no
// temporary directory behind.
func TestLlama2cCompileError(t *testing.T) {
	if err := checkLlama2cCheckout(t.TempDir()); err == nil {
		t.Error("a directory without run.c was accepted")
	}
	checkout := t.TempDir()
	if err := os.WriteFile(filepath.Join(checkout, "run.c"), []byte("int main( {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc")
	}
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "bench-llama2c-*"))
	_, err := newLlama2c(checkout, scaledModel(t, smallLlama(false, 0), 1))
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "run.c") {
		t.Errorf("error %q, want one line naming run.c", err)
	}
	if after, _ := filepath.Glob(filepath.Join(os.TempDir(), "bench-llama2c-*")); len(after) != len(before) {
		t.Errorf("temporary directories %v before, %v after", before, after)
	}
}
