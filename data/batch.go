package data

import (
	"math/rand/v2"

	"github.com/pkg/errors"
)

// Batch holds Size examples of SeqLen positions, flat in row-major
// (row, position) order: position t of row b is at index b*SeqLen+t.
type Batch struct {
	Size, SeqLen int
	Tokens       []int     // (Size*SeqLen) input ids
	Targets      []int     // (Size*SeqLen) next-token ids
	Mask         []float64 // (Size*SeqLen) 1 where scored, else 0
}

// BytesPerPosition is the memory a Batch takes per position: a token and a
// target (int, 8 bytes on the 64-bit systems this project runs on) and a mask
// value (float64).
const BytesPerPosition = 8 + 8 + 8

// NewBatch allocates a zeroed batch; a negative size or seqLen counts as 0.
func NewBatch(size, seqLen int) *Batch {
	size, seqLen = max(size, 0), max(seqLen, 0)
	n := size * seqLen
	return &Batch{Size: size, SeqLen: seqLen, Tokens: make([]int, n), Targets: make([]int, n), Mask: make([]float64, n)}
}

// Row returns the slices of row i, sharing memory with the batch.
func (b *Batch) Row(i int) (tokens, targets []int, mask []float64) {
	lo, hi := i*b.SeqLen, (i+1)*b.SeqLen
	return b.Tokens[lo:hi], b.Targets[lo:hi], b.Mask[lo:hi]
}

// Head is the batch of b's first n rows, sharing memory with b.
func (b *Batch) Head(n int) *Batch {
	k := n * b.SeqLen
	return &Batch{Size: n, SeqLen: b.SeqLen, Tokens: b.Tokens[:k:k], Targets: b.Targets[:k:k], Mask: b.Mask[:k:k]}
}

// LoadChunk copies rows lo.. of set into b, as many as b holds or set has
// left, and returns how many it copied. The rows past them repeat set's first
// row with a zero mask, so a graph of b's fixed size can score the last,
// short chunk of a set: the padding adds nothing to a masked loss.
func (b *Batch) LoadChunk(set *Batch, lo int) (rows int) {
	t := set.SeqLen
	rows = min(b.Size, set.Size-lo)
	copy(b.Tokens, set.Tokens[lo*t:(lo+rows)*t])
	copy(b.Targets, set.Targets[lo*t:(lo+rows)*t])
	copy(b.Mask, set.Mask[lo*t:(lo+rows)*t])
	for r := rows; r < b.Size; r++ {
		copy(b.Tokens[r*t:(r+1)*t], set.Tokens[:t])
		copy(b.Targets[r*t:(r+1)*t], set.Targets[:t])
		clear(b.Mask[r*t : (r+1)*t])
	}
	return rows
}

// Fill draws every row of b from task, in row order, using rng.
func Fill(task Task, b *Batch, rng *rand.Rand) error {
	if b.SeqLen != task.SeqLen() {
		return errors.Errorf("batch of sequence length %d cannot hold task %s of sequence length %d", b.SeqLen, task.Name(), task.SeqLen())
	}
	for i := range b.Size {
		tokens, targets, mask := b.Row(i)
		task.Sample(rng, tokens, targets, mask)
	}
	return nil
}

// EvalStream is the second PCG word of the evaluation stream. Training steps
// use the step number there (StepRNG), which never gets this large.
const EvalStream uint64 = 0x6576_616c_0000_0000 // "eval" in the high bytes

// StepRNG returns the generator for training step step of a run seeded with
// seed. Deriving it from (seed, step) rather than carrying one generator
// across steps lets a resumed run draw exactly the batches it would have drawn.
func StepRNG(seed uint64, step int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(step)))
}

// EvalSet draws n examples of task from the evaluation stream of seed (see
// EvalStream), from the held-out part of a text (HeldOut). The same seed always gives the same set.
func EvalSet(task Task, n int, seed uint64) *Batch {
	b := NewBatch(n, task.SeqLen())
	// Fill cannot fail: b was sized for task.
	_ = Fill(HeldOut(task), b, rand.New(rand.NewPCG(seed, EvalStream)))
	return b
}
