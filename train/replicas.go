package train

import (
	"math/rand/v2"
	"sync"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/model"
)

// replicaCount is how many parts a training batch is split into: one per
// core of the two-core machines this project is measured on. It is a
// constant, not the machine's core count, so that a config trains to the
// same numbers on every machine (the parts' sums are added in a fixed
// order).
const replicaCount = 2

// Replicas is a training step whose batch is split by rows into parts, each
// its own Train graph (model.Build) bound to the same weights, run at once
// on their own goroutines (kernels.Concurrently): every op of the step,
// small ones included, then has a core to itself, where a single graph
// keeps the second core busy only inside the few ops large enough to split.
//
// The loss and gradients are the parts' weighted by their scored
// positions, so they are those of one graph of the whole batch (the mean
// over every scored position), up to float rounding: the parts' sums are
// added in a different order. Dropout masks are drawn in the whole batch's
// order, so they are the same values too.
//
// Memory: the parts share the model's weights, and the whole batch's
// gradients are written over the first part's (no third set), and each
// part runs on a one-shot machine (model.Graph.NewOneShotMachine), which
// lets go of an activation once the backward pass has read it for the
// last time and hands its memory to a later op, so a step holds its
// largest working set rather than every value of the graph.
type Replicas struct {
	parts []*model.Graph // part i holds batch rows [rows[i], rows[i+1])
	model *model.Model

	vms    []gorgonia.VM
	rows   []int
	seqLen int
	counts []float64       // each part's scored positions (loss mask sum) in the last Feed
	errs   []error         // each part's error of the last run, then of its share of the combination
	grads  []*tensor.Dense // the combined gradients: the first part's, overwritten by the combination
	loss   float64
	ran    bool // the last Feed was run
}

// BuildReplicas builds the training step of batch rows of seqLen positions
// as min(replicaCount, batch) parts of about equal size, each with a lean
// machine (model.Graph.NewLeanMachine).
func BuildReplicas(m *model.Model, batch, seqLen int) (*Replicas, error) {
	if batch < 1 {
		return nil, errors.Errorf("build: batch %d, want >= 1", batch)
	}
	parts := min(replicaCount, batch)
	r := &Replicas{model: m, seqLen: seqLen, counts: make([]float64, parts), errs: make([]error, 2*parts)}
	for i := range parts {
		lo, hi := i*batch/parts, (i+1)*batch/parts
		g, err := model.Build(m, model.BuildOptions{Batch: hi - lo, SeqLen: seqLen, Train: true})
		if err != nil {
			r.Close()
			return nil, err
		}
		r.parts, r.rows = append(r.parts, g), append(r.rows, lo)
		r.vms = append(r.vms, g.NewOneShotMachine())
	}
	r.rows = append(r.rows, batch)
	return r, nil
}

// batch is the number of rows the parts hold together.
func (r *Replicas) batch() int { return r.rows[len(r.rows)-1] }

// Feed splits one batch (as model.Graph.Feed takes it) by rows into the parts.
// Nothing is copied when any check fails; an error names the position in
// the whole batch.
func (r *Replicas) Feed(tokens, targets []int, lossMask []float64) error {
	if err := r.model.Config.CheckFeed(r.batch(), r.seqLen, tokens, targets, lossMask); err != nil {
		return err
	}
	r.ran = false
	for i, g := range r.parts {
		lo, hi := r.rows[i]*r.seqLen, r.rows[i+1]*r.seqLen
		if err := g.Feed(tokens[lo:hi], targets[lo:hi], lossMask[lo:hi]); err != nil {
			return err
		}
		// The sum of the mask as the loss op reads it, in the model's dtype.
		r.counts[i] = 0
		switch mask := g.LossMask.Value().Data().(type) {
		case []float32:
			for _, x := range mask {
				r.counts[i] += float64(x)
			}
		case []float64:
			for _, x := range mask {
				r.counts[i] += x
			}
		}
	}
	return nil
}

// drawDropout fills the parts' dropout masks from rng in the order
// model.Graph.DrawDropout fills one graph's (layer by layer, each layer's
// rows in batch order), so the split batch drops what the whole one would.
func (r *Replicas) drawDropout(p float64, rng *rand.Rand) error {
	for l := range r.parts[0].DropoutMasks {
		for _, g := range r.parts {
			if err := g.DrawLayerDropout(l, p, rng); err != nil {
				return err
			}
		}
	}
	return nil
}

// RunAll runs every part at once, then combines their losses and
// gradients, each part's goroutine combining its share of the gradients'
// elements once every part has run (so the combination takes both cores
// too).
func (r *Replicas) RunAll() error {
	r.ran = false
	clear(r.errs)
	n := len(r.parts)
	var ran sync.WaitGroup
	ran.Add(n)
	kernels.Concurrently(n, func(i int) {
		r.errs[i] = r.vms[i].RunAll()
		ran.Done()
		ran.Wait()
		for _, err := range r.errs[:n] {
			if err != nil {
				return
			}
		}
		r.errs[n+i] = r.combineShare(i)
	})
	for i, err := range r.errs {
		if err != nil {
			if i >= n {
				return err
			}
			return errors.Wrapf(err, "batch rows %d-%d", r.rows[i], r.rows[i+1]-1)
		}
	}
	return r.combineLoss()
}

// Reset readies every part's machine for the next run.
func (r *Replicas) Reset() {
	for _, vm := range r.vms {
		vm.Reset()
	}
}

// Close releases the parts' machines.
func (r *Replicas) Close() {
	for _, vm := range r.vms {
		vm.Close()
	}
}

// weights are the parts' shares of the scored positions (a part with none
// adds nothing; with none at all the loss and gradients are 0, as one
// graph's).
func (r *Replicas) weights() []float64 {
	total := 0.0
	for _, c := range r.counts {
		total += c
	}
	w := make([]float64, len(r.counts))
	for i, c := range r.counts {
		if c != 0 {
			w[i] = c / total
		}
	}
	return w
}

// combineLoss sets the loss to the parts' losses weighted by their scored
// positions.
func (r *Replicas) combineLoss() error {
	r.loss = 0
	for i, w := range r.weights() {
		if w == 0 {
			continue
		}
		loss, err := r.parts[i].LossValue()
		if err != nil {
			return err
		}
		r.loss += w * loss
	}
	grads, err := r.parts[0].Gradients()
	if err != nil {
		return err
	}
	r.grads, r.ran = grads, true
	return nil
}

// combineShare sets share i (of len(parts)) of the gradients' elements,
// all parameters taken as one sequence, to the parts' gradients weighted by
// their scored positions, written over the first part's: each element is
// read from every part before it is written.
func (r *Replicas) combineShare(i int) error {
	parts := make([][]*tensor.Dense, len(r.parts))
	for p, g := range r.parts {
		var err error
		if parts[p], err = g.Gradients(); err != nil {
			return err
		}
	}
	weights := r.weights()
	size := 0
	for _, g := range parts[0] {
		size += g.Shape().TotalSize()
	}
	lo, hi := i*size/len(r.parts), (i+1)*size/len(r.parts)
	off := 0
	for j, g := range parts[0] {
		n := g.Shape().TotalSize()
		if from, to := max(lo, off)-off, min(hi, off+n)-off; from < to {
			if g.Dtype() == tensor.Float32 { // typed slices: Dense.Data boxes one by reflection, two allocations a call
				weightedSum(g.Float32s()[from:to], weights, parts, j, from, (*tensor.Dense).Float32s)
			} else {
				weightedSum(g.Float64s()[from:to], weights, parts, j, from, (*tensor.Dense).Float64s)
			}
		}
		off += n
	}
	return nil
}

// weightedSum sets dst to the sum over parts p of weights[p] times part p's
// gradient j (its elements read by elems) from element from on, each
// element summed in float64 in part order and rounded once. dst may be a
// part's own gradient: each element is read from every part before it is
// written.
func weightedSum[T float32 | float64](dst []T, weights []float64, parts [][]*tensor.Dense, j, from int, elems func(*tensor.Dense) []T) {
	var ws []float64
	var srcs [][]T
	for p, w := range weights {
		if w != 0 {
			ws, srcs = append(ws, w), append(srcs, elems(parts[p][j])[from:])
		}
	}
	if len(srcs) == 2 { // the usual case, without the inner loop
		w0, w1, a, b := ws[0], ws[1], srcs[0][:len(dst)], srcs[1][:len(dst)]
		for k := range dst {
			dst[k] = T(w0*float64(a[k]) + w1*float64(b[k]))
		}
		return
	}
	for k := range dst {
		sum := 0.0
		for p, src := range srcs {
			sum += ws[p] * float64(src[k])
		}
		dst[k] = T(sum)
	}
}

// LossValue is the whole batch's loss of the last run: the mean
// cross-entropy over its scored positions.
func (r *Replicas) LossValue() (float64, error) {
	if !r.ran {
		return 0, errors.New("loss: no value (run the machine first)")
	}
	return r.loss, nil
}

// Gradients returns d Loss / d Params[i] of the whole batch of the last
// run, in Params order. The tensors belong to r: read them before the next
// run; the caller may scale them in place (gradient clipping).
func (r *Replicas) Gradients() ([]*tensor.Dense, error) {
	if !r.ran {
		return nil, errors.New("gradients: no gradient yet (run the machine first)")
	}
	return r.grads, nil
}
