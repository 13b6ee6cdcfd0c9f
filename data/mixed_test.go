package data

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestMixedLengths: with task.min_length below task.length, every example
// is one of the task's examples at a length in [min, length] (checked
// against the task at that length drawn from the same generator), padded
// with zero tokens, targets and mask; every length occurs; and the same
// seed gives the same batch.
func TestMixedLengths(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			cfg := TaskConfig{Name: name, Length: 9, Symbols: 16, MinLength: 5}
			task, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			full, _ := New(TaskConfig{Name: name, Length: 9, Symbols: 16})
			if task.SeqLen() != full.SeqLen() || task.Vocab() != full.Vocab() {
				t.Fatalf("mixed task is T %d V %d, want the longest's T %d V %d", task.SeqLen(), task.Vocab(), full.SeqLen(), full.Vocab())
			}
			b := NewBatch(200, task.SeqLen())
			if err := Fill(task, b, rand.New(rand.NewPCG(3, 4))); err != nil {
				t.Fatal(err)
			}
			again := NewBatch(200, task.SeqLen())
			_ = Fill(task, again, rand.New(rand.NewPCG(3, 4)))
			seen := map[int]bool{}
			replay := rand.New(rand.NewPCG(3, 4))
			for i := 0; i < b.Size; i++ {
				l := 5 + replay.IntN(5)
				seen[l] = true
				one, _ := AtLength(cfg, l)
				n := one.SeqLen()
				tok, tgt, mask := make([]int, n), make([]int, n), make([]float64, n)
				one.Sample(replay, tok, tgt, mask)
				rt, rg, rm := b.Row(i)
				for p := 0; p < b.SeqLen; p++ {
					if p < n && (rt[p] != tok[p] || rg[p] != tgt[p] || rm[p] != mask[p]) {
						t.Fatalf("row %d (length %d) position %d differs from the task at that length", i, l, p)
					}
					if p >= n && (rt[p] != 0 || rg[p] != 0 || rm[p] != 0) {
						t.Fatalf("row %d (length %d): padding at %d is %d/%d/%v, want zeros", i, l, p, rt[p], rg[p], rm[p])
					}
				}
				at, ag, am := again.Row(i)
				for p := range rt {
					if at[p] != rt[p] || ag[p] != rg[p] || am[p] != rm[p] {
						t.Fatalf("row %d differs between two fills with the same seed", i)
					}
				}
			}
			if len(seen) != 5 {
				t.Errorf("lengths drawn %v, want all of 5..9", seen)
			}
		})
	}
}

// TestMinLengthErrors: min_length outside [1, length], or too short for the
// task, is refused naming the key and the numbers.
func TestMinLengthErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  TaskConfig
		want string
	}{
		{TaskConfig{Name: "copy", Length: 8, Symbols: 16, MinLength: 9}, "task.min_length = 9: must be in [1, task.length = 8]"},
		{TaskConfig{Name: "copy", Length: 8, Symbols: 16, MinLength: -1}, "task.min_length = -1"},
		{TaskConfig{Name: "induction", Length: 12, Symbols: 25, MinLength: 2}, "task.min_length = 2: task.length = 2: induction needs at least 3 positions"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.cfg, err, c.want)
		}
	}
}
