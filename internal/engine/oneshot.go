package engine

import (
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// NewOneShotMachine is NewMachine for a graph that runs once (an
// inspection's forward over a long sequence). NewMachine keeps every op
// node's value for the next run to reuse: about 500 MB at GPT-2 small's
// size over 256 tokens. This machine lets go of a value as soon as the last
// op that reads it has run, unless the node is among outputs, and so does
// an op that holds its output between runs (package ops' buffers, through
// Release). Memory let go of is handed to a later op of the same dtype and
// size to write into (Prealloc, or UsePreallocDo as on a second run), so a
// run allocates about its largest working set; left to the collector, the
// heap would grow by a quarter past what is live (the commands' GC percent,
// internal/cli) before any of it came back. Memory that a value still held
// is a view of is left to the collector. Value reads nil for an op node let
// go of. Running again is right, and writes into the memory the run before
// let go of (a training step run again and again, train.Replicas), so a
// step allocates only the outputs of ops that take no memory handed to
// them.
func NewOneShotMachine(g *gorgonia.ExprGraph, outputs ...*gorgonia.Node) (*Machine, error) {
	m, err := NewMachine(g, outputs...)
	if err != nil {
		return nil, err
	}
	m.lastUse = make([]int, len(m.ops))
	for i := range m.ops {
		m.lastUse[i] = i // read by no op: gone as soon as it is made
	}
	for i, from := range m.from {
		for _, j := range from {
			if j >= 0 {
				m.lastUse[j] = i // ops run in order: the last reader is the latest
			}
		}
	}
	for i, bound := range m.bind {
		if bound {
			m.lastUse[i] = -1
		}
	}
	m.free, m.wanted = map[freeKey][]*tensor.Dense{}, map[freeKey]int{}
	return m, nil
}

// freeKey sorts the tensors a one-shot run may hand on: by dtype and size.
type freeKey struct {
	dtype tensor.Dtype
	size  int
}

// releaser is an op that holds its output from run to run (package ops'
// op) and lets go of it on Release.
type releaser interface{ Release() }

// preallocator is an op that writes into a buffer of its own and may be
// handed one to use when it has none (package ops' op).
type preallocator interface{ Prealloc(*tensor.Dense) }

// prealloc hands op i, before it runs, a free tensor of its output's dtype
// and size, shaped as its output, when one is free and the op takes one.
// An op whose value the machine still holds (a bound output) has its
// memory already: a free tensor handed to it would be dropped (an op of
// package ops keeps the buffer it has), and with it, every run, memory the
// next run's ops could have written into.
func (m *Machine) prealloc(i int) {
	n := m.ops[i]
	p, takes := n.Op().(preallocator)
	if m.vals[i] != nil || (!takes && m.reuse[i] == reuseNever) {
		return
	}
	key := freeKey{n.Dtype(), n.Shape().TotalSize()}
	m.wanted[key]++
	list := m.free[key]
	if len(list) == 0 {
		return
	}
	t := list[len(list)-1]
	if err := t.Reshape(n.Shape()...); err != nil {
		return
	}
	m.free[key] = list[:len(list)-1]
	if takes {
		p.Prealloc(t)
	} else {
		m.vals[i], m.own[i] = t, true
	}
}

// trimFree, after a run, keeps of each size only as many free tensors as
// the run's ops asked for: the next run asks for as many (the graph is the
// same), and the values of ops that always allocate (those without
// UsePreallocDo, as Transpose) would otherwise pile up run after run.
func (m *Machine) trimFree() {
	for key, list := range m.free {
		if keep := m.wanted[key]; len(list) > keep {
			clear(list[keep:])
			m.free[key] = list[:keep]
		}
	}
	clear(m.wanted)
}

// releaseAfter lets go, once op i has run, of its arguments and of every
// value whose last reader it is (op i's own when nothing reads it).
func (m *Machine) releaseAfter(i int) {
	clear(m.args[i])
	for _, j := range m.from[i] {
		if j >= 0 && m.lastUse[j] == i {
			m.release(j)
		}
	}
	if m.lastUse[i] == i {
		m.release(i)
	}
}

// release forgets op j's value, in the machine and in the op, and frees
// its memory for a later op when it is memory of its own that no value
// still held overlaps (a view of it).
func (m *Machine) release(j int) {
	v, own := m.vals[j], m.own[j]
	m.vals[j], m.own[j] = nil, false
	if r, ok := m.ops[j].Op().(releaser); ok {
		r.Release()
	}
	d, ok := v.(*tensor.Dense)
	if !own || !ok || m.viewed(d) {
		return
	}
	key := freeKey{d.Dtype(), d.Shape().TotalSize()}
	m.free[key] = append(m.free[key], d)
}

// viewed says whether a value the machine still holds overlaps d's memory.
func (m *Machine) viewed(d *tensor.Dense) bool {
	for _, v := range m.vals {
		if v != nil && overlap(d, v) {
			return true
		}
	}
	return false
}
