package generate

import (
	"math"
	"slices"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/opentest"
)

// windowLogits is the reference: the logits of the last position of a
// full forward of each row's last size tokens (opentest.Logits, a graph of
// the test's own), (rows*V) row-major.
func windowLogits(t *testing.T, m *model.Model, rows [][]int, size int) []float64 {
	t.Helper()
	n := min(size, len(rows[0]))
	b := &data.Batch{Size: len(rows), SeqLen: n, Mask: make([]float64, len(rows)*n)}
	for _, row := range rows {
		b.Tokens = append(b.Tokens, row[len(row)-n:]...)
	}
	b.Targets = b.Tokens
	all := opentest.Logits(t, m, b)
	v := m.Config.Vocab
	var out []float64
	for r := range rows {
		out = append(out, all[(r*n+n-1)*v:(r*n+n)*v]...)
	}
	return out
}

// TestWindowCropIsAFullForwardOfTheWindow: with learned positions, on the
// KV-cache path and without it, both attention paths, two rows: every
// step's logits equal those of a fresh full forward of the row's last
// Context tokens (the whole prefix before the context fills, the cropped
// window after), within 1e-9 (float64: the cache and the forward add the
// same terms in another order).
func TestWindowCropIsAFullForwardOfTheWindow(t *testing.T) {
	const size, steps = 6, 14
	for _, path := range []string{"fused", "gorgonia"} {
		cfg := model.Config{Vocab: 11, Context: size, DModel: 16, Heads: 2, Layers: 2, MLP: true, DFF: 32, Attention: path}
		m, err := model.New(cfg, tensor.Float64, 7)
		if err != nil {
			t.Fatal(err)
		}
		for _, cached := range []bool{true, false} {
			w, err := NewWindow(m, 2, 2, size, cached)
			if err != nil {
				t.Fatal(err)
			}
			rows := [][]int{nil, nil}
			for s := range steps {
				next := []int{(3*s + 1) % cfg.Vocab, (5*s + 2) % cfg.Vocab}
				rows[0], rows[1] = append(rows[0], next[0]), append(rows[1], next[1])
				got, err := w.Step(next)
				if err != nil {
					t.Fatalf("%s cached=%v step %d: %v", path, cached, s, err)
				}
				want := windowLogits(t, m, rows, size)
				for i := range want {
					if math.Abs(got[i]-want[i]) > 1e-9 {
						t.Fatalf("%s cached=%v step %d (%d tokens): logit %d = %v, the window's forward %v", path, cached, s, len(rows[0]), i, got[i], want[i])
					}
				}
			}
			if w.Len() != steps {
				t.Errorf("%s cached=%v: Len %d after %d steps", path, cached, w.Len(), steps)
			}
			w.Close()
		}
	}
}

// TestGreedyPastTheContextCrops: greedy generation through a Window past a
// learned context of 5, from a prompt of 3, writes the tokens of a
// reference loop that runs a full forward of the last 5 tokens at every
// step and appends the argmax (nanoGPT's sample.py), with the cache and
// without.
func TestGreedyPastTheContextCrops(t *testing.T) {
	const size, n = 5, 12
	cfg := model.Config{Vocab: 9, Context: size, DModel: 16, Heads: 2, Layers: 1, MLP: true, DFF: 16}
	m, err := model.New(cfg, tensor.Float64, 3)
	if err != nil {
		t.Fatal(err)
	}
	prompt := []int{4, 1, 7}
	seq := slices.Clone(prompt)
	for range n {
		seq = append(seq, model.Argmax(windowLogits(t, m, [][]int{seq}, size)))
	}
	want := seq[len(prompt):]
	for _, cached := range []bool{true, false} {
		w, err := NewWindow(m, 1, 2, size, cached)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := NewSampler(Greedy)
		got, err := Generate(w, [][]int{prompt}, []int{n}, s, cfg.Vocab)
		w.Close()
		if err != nil || !slices.Equal(got[0], want) {
			t.Errorf("cached=%v: wrote %v (%v), the cropping reference %v", cached, got, err, want)
		}
	}
}
