package data

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func mustTask(t *testing.T, name string, length, symbols int) Task {
	t.Helper()
	task, err := New(TaskConfig{Name: name, Length: length, Symbols: symbols})
	if err != nil {
		t.Fatalf("New(%s, %d, %d): %v", name, length, symbols, err)
	}
	return task
}

func filled(t *testing.T, task Task, size int, rng *rand.Rand) *Batch {
	t.Helper()
	b := NewBatch(size, task.SeqLen())
	if err := Fill(task, b, rng); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSizes(t *testing.T) {
	cases := []struct {
		name                  string
		length, symbols       int
		wantVocab, wantSeqLen int
	}{
		{"repeat", 12, 64, 64, 12},
		{"copy", 8, 16, 17, 16},
		{"reverse", 5, 10, 11, 10},
		{"sort", 1, 2, 3, 2},
		{"induction", 24, 32, 32, 24},
	}
	for _, c := range cases {
		task := mustTask(t, c.name, c.length, c.symbols)
		if task.Name() != c.name || task.Vocab() != c.wantVocab || task.SeqLen() != c.wantSeqLen {
			t.Errorf("%s L=%d S=%d: name %q vocab %d seqlen %d, want vocab %d seqlen %d",
				c.name, c.length, c.symbols, task.Name(), task.Vocab(), task.SeqLen(), c.wantVocab, c.wantSeqLen)
		}
	}
}

func TestRepeatLayout(t *testing.T) {
	task := mustTask(t, "repeat", 12, 64)
	b := filled(t, task, 200, StepRNG(1, 0))
	seen := map[int]bool{}
	for r := range b.Size {
		tokens, targets, mask := b.Row(r)
		s := tokens[0]
		seen[s] = true
		for i := range tokens {
			if tokens[i] != s || targets[i] != s || mask[i] != 1 {
				t.Fatalf("row %d pos %d: token %d target %d mask %v, want %d %d 1", r, i, tokens[i], targets[i], mask[i], s, s)
			}
		}
	}
	// 200 draws from 64 symbols miss any given symbol with probability
	// (63/64)^200 ~ 4%, so well over half of them must show up.
	if len(seen) < 40 {
		t.Errorf("only %d distinct symbols in 200 rows", len(seen))
	}
}

// TestHalvesLayout rebuilds each row's full sequence and checks it against a
// plain reference for the task's second half.
func TestHalvesLayout(t *testing.T) {
	const l, symbols = 7, 9
	reference := map[string]func([]int) []int{
		"copy": func(x []int) []int { return slices.Clone(x) },
		"reverse": func(x []int) []int {
			y := make([]int, len(x))
			for i := range x {
				y[i] = x[len(x)-1-i]
			}
			return y
		},
		"sort": func(x []int) []int {
			// insertion sort, independent of slices.Sort
			y := slices.Clone(x)
			for i := 1; i < len(y); i++ {
				for j := i; j > 0 && y[j-1] > y[j]; j-- {
					y[j-1], y[j] = y[j], y[j-1]
				}
			}
			return y
		},
	}
	for name, want := range reference {
		task := mustTask(t, name, l, symbols)
		b := filled(t, task, 100, StepRNG(2, 3))
		unsorted := 0
		for r := range b.Size {
			tokens, targets, mask := b.Row(r)
			// targets are the inputs shifted by one
			if !slices.Equal(tokens[1:], targets[:2*l-1]) {
				t.Fatalf("%s row %d: targets %v are not tokens %v shifted", name, r, targets, tokens)
			}
			seq := append(slices.Clone(tokens), targets[2*l-1])
			first, sep, second := seq[:l], seq[l], seq[l+1:]
			if sep != symbols || task.Label(sep) != "SEP" {
				t.Fatalf("%s row %d: position %d holds %d (%s), want separator %d", name, r, l, sep, task.Label(sep), symbols)
			}
			for i, s := range first {
				if s < 0 || s >= symbols {
					t.Fatalf("%s row %d: first-half id %d at %d out of [0, %d)", name, r, s, i, symbols)
				}
			}
			if !slices.Equal(second, want(first)) {
				t.Fatalf("%s row %d: second half %v, want %v for first half %v", name, r, second, want(first), first)
			}
			if !slices.IsSorted(first) {
				unsorted++
			}
			for i, m := range mask {
				if wantM := float64(boolInt(i >= l)); m != wantM {
					t.Fatalf("%s row %d: mask[%d] = %v, want %v", name, r, i, m, wantM)
				}
			}
		}
		// a random 7-symbol sequence is sorted with probability < 1%
		if unsorted < 50 {
			t.Errorf("%s: only %d of 100 first halves are unsorted", name, unsorted)
		}
	}
}

// TestInductionLayout checks every drawn row against the task's definition:
// one block of length L in InductionBlockRange occurs twice, every other
// symbol occurs once, and exactly the second copy's symbols 2..L are
// scored, each the symbol after its earlier occurrence.
func TestInductionLayout(t *testing.T) {
	task := mustTask(t, "induction", 24, 32)
	lo, hi := InductionBlockRange(24)
	if lo != 6 || hi != 12 {
		t.Fatalf("InductionBlockRange(24) = %d, %d, want 6, 12", lo, hi)
	}
	b := filled(t, task, 500, StepRNG(2, 0))
	lengths, starts := map[int]bool{}, map[int]bool{}
	for r := range b.Size {
		tokens, targets, mask := b.Row(r)
		seq := append(slices.Clone(tokens), targets[len(targets)-1])
		for i := range len(tokens) - 1 {
			if targets[i] != tokens[i+1] {
				t.Fatalf("row %d: target %d is not the next token", r, i)
			}
		}
		first := map[int]int{} // symbol -> position of its first occurrence
		second := -1           // first position of the second copy
		for i, s := range seq {
			j, seen := first[s]
			if !seen {
				first[s] = i
				continue
			}
			if second < 0 {
				second = i
			}
			// A repeated symbol continues the copy: the same distance back.
			if i-j != second-first[seq[second]] {
				t.Fatalf("row %d: symbol %d repeats at %d from %d, off the copy", r, s, i, j)
			}
		}
		if second < 0 {
			t.Fatalf("row %d: no repeated symbol: %v", r, seq)
		}
		l := 0
		for second+l < len(seq) && seq[second+l] == seq[first[seq[second]]+l] {
			l++
		}
		if l < lo || l > hi || first[seq[second]]+l > second {
			t.Fatalf("row %d: block of %d at %d and %d, want length in [%d, %d] without overlap", r, l, first[seq[second]], second, lo, hi)
		}
		lengths[l], starts[second] = true, true
		for i, m := range mask {
			want := i >= second && i < second+l-1
			if (m == 1) != want || (m != 0 && m != 1) {
				t.Fatalf("row %d: mask[%d] = %v, want %v (copy at %d, length %d)", r, i, m, boolInt(want), second, l)
			}
		}
	}
	if len(lengths) != hi-lo+1 || len(starts) < 10 {
		t.Errorf("500 rows drew %d block lengths (want %d) and %d second-copy starts", len(lengths), hi-lo+1, len(starts))
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestIDsInRange(t *testing.T) {
	for _, name := range Names() {
		task := mustTask(t, name, 4, 3)
		b := filled(t, task, 300, StepRNG(5, 0))
		counts := make([]int, task.Vocab())
		for i := range b.Tokens {
			for _, id := range []int{b.Tokens[i], b.Targets[i]} {
				if id < 0 || id >= task.Vocab() {
					t.Fatalf("%s: id %d at %d out of [0, %d)", name, id, i, task.Vocab())
				}
				counts[id]++
			}
		}
		for id, n := range counts {
			if n == 0 {
				t.Errorf("%s: id %d (%s) never drawn in 300 rows", name, id, task.Label(id))
			}
		}
	}
}

func TestDeterminism(t *testing.T) {
	for _, name := range Names() {
		task := mustTask(t, name, 8, 16)
		a := filled(t, task, 16, StepRNG(7, 42))
		b := filled(t, task, 16, StepRNG(7, 42))
		if !slices.Equal(a.Tokens, b.Tokens) || !slices.Equal(a.Targets, b.Targets) || !slices.Equal(a.Mask, b.Mask) {
			t.Errorf("%s: same seed and step gave different batches", name)
		}
		for _, other := range []*Batch{filled(t, task, 16, StepRNG(8, 42)), filled(t, task, 16, StepRNG(7, 43))} {
			if slices.Equal(a.Tokens, other.Tokens) {
				t.Errorf("%s: a different seed or step gave the same batch", name)
			}
		}
	}
}

func TestEvalSet(t *testing.T) {
	task := mustTask(t, "copy", 8, 16)
	e1, e2 := EvalSet(task, 50, 3), EvalSet(task, 50, 3)
	if e1.Size != 50 || e1.SeqLen != 16 || !slices.Equal(e1.Tokens, e2.Tokens) {
		t.Fatalf("EvalSet not reproducible or wrong size: %d x %d", e1.Size, e1.SeqLen)
	}
	if slices.Equal(e1.Tokens, EvalSet(task, 50, 4).Tokens) {
		t.Error("EvalSet ignores its seed")
	}
	// With 16^8 possible first halves, no eval row should equal a row of the
	// first training steps' batches drawn from the same seed.
	eval := map[string]bool{}
	for r := range e1.Size {
		tokens, _, _ := e1.Row(r)
		eval[key(tokens)] = true
	}
	for step := range 20 {
		b := filled(t, task, 32, StepRNG(3, step))
		for r := range b.Size {
			tokens, _, _ := b.Row(r)
			if eval[key(tokens)] {
				t.Fatalf("training step %d row %d replays an eval example", step, r)
			}
		}
	}
}

func key(ids []int) string {
	var s strings.Builder
	for _, id := range ids {
		s.WriteString(string(rune('a' + id)))
	}
	return s.String()
}

func TestFillRejectsWrongLength(t *testing.T) {
	task := mustTask(t, "copy", 8, 16)
	err := Fill(task, NewBatch(2, 12), StepRNG(1, 0))
	if err == nil || !strings.Contains(err.Error(), "sequence length 12") || !strings.Contains(err.Error(), "sequence length 16") {
		t.Fatalf("Fill with wrong length: %v", err)
	}
}

func TestLabels(t *testing.T) {
	copyTask := mustTask(t, "copy", 3, 10)
	repeatTask := mustTask(t, "repeat", 3, 10)
	cases := []struct {
		task Task
		id   int
		want string
	}{
		{copyTask, 0, "0"}, {copyTask, 9, "9"}, {copyTask, 10, "SEP"}, {copyTask, 11, "<11>"}, {copyTask, -1, "<-1>"},
		{repeatTask, 9, "9"}, {repeatTask, 10, "<10>"},
	}
	for _, c := range cases {
		if got := c.task.Label(c.id); got != c.want {
			t.Errorf("%s Label(%d) = %q, want %q", c.task.Name(), c.id, got, c.want)
		}
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		cfg  TaskConfig
		want string
	}{
		{TaskConfig{Name: "copyy", Length: 8, Symbols: 16}, `task.name = "copyy": unknown task (want one of: copy, induction, repeat, reverse, sort, text)`},
		{TaskConfig{Name: "induction", Length: 2, Symbols: 16}, "task.length = 2: induction needs at least 3 positions"},
		{TaskConfig{Name: "induction", Length: 24, Symbols: 18}, "task.symbols = 18: induction of length 24 draws 19 distinct symbols"},
		{TaskConfig{Name: "", Length: 8, Symbols: 16}, `task.name = "": unknown task`},
		{TaskConfig{Name: "copy", Length: 0, Symbols: 16}, "task.length = 0: must be in [1, 512]"},
		{TaskConfig{Name: "copy", Length: 513, Symbols: 16}, "task.length = 513: must be in [1, 512]"},
		{TaskConfig{Name: "sort", Length: 8, Symbols: 1}, "task.symbols = 1: must be in [2, 65536]"},
		{TaskConfig{Name: "sort", Length: 8, Symbols: 65537}, "task.symbols = 65537: must be in [2, 65536]"},
	}
	for _, c := range cases {
		_, err := New(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want error containing %q", c.cfg, err, c.want)
		}
	}
	if _, err := New(TaskConfig{Name: "repeat", Length: 512, Symbols: 65536}); err != nil {
		t.Errorf("largest allowed task rejected: %v", err)
	}
}

// TestLoadChunk: a full chunk is rows lo.. of the set; the last, short chunk
// holds the set's remaining rows, then copies of its first row with a zero
// mask, whatever the chunk held before.
func TestLoadChunk(t *testing.T) {
	set := EvalSet(mustTask(t, "copy", 3, 5), 5, 1)
	chunk := NewBatch(3, set.SeqLen)
	for lo, wantRows := range map[int]int{0: 3, 3: 2} {
		for i := range chunk.Mask {
			chunk.Tokens[i], chunk.Targets[i], chunk.Mask[i] = -1, -1, 7
		}
		if rows := chunk.LoadChunk(set, lo); rows != wantRows {
			t.Fatalf("LoadChunk(set, %d) copied %d rows, want %d", lo, rows, wantRows)
		}
		for r := range chunk.Size {
			from := lo + r
			if r >= wantRows {
				from = 0
			}
			wantTokens, wantTargets, wantMask := set.Row(from)
			if r >= wantRows {
				wantMask = make([]float64, set.SeqLen)
			}
			tokens, targets, mask := chunk.Row(r)
			if !slices.Equal(tokens, wantTokens) || !slices.Equal(targets, wantTargets) || !slices.Equal(mask, wantMask) {
				t.Errorf("lo %d row %d: %v %v %v, want set row %d with mask %v", lo, r, tokens, targets, mask, from, wantMask)
			}
		}
	}
}
