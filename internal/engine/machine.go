package engine

import (
	"reflect"
	"slices"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Machine runs a graph as a TapeMachine does, every op node once per run in
// topological order (gorgonia.Sort, as Compile orders its program), each
// through its op's Do, but it keeps each op node's value from run to run and,
// from the second run on, hands it back to an op that implements
// gorgonia.UsePreallocDoer (Gorgonia's element-wise arithmetic and
// broadcasts, Mul and BatchedMatMul, ...) to write into. It is a gorgonia.VM
// (RunAll, Reset, Close): model.Graph.NewLeanMachine's machine, and
// model.Decoder's.
//
// What it does differently from a TapeMachine, and why:
//
//   - The TapeMachine's Reset forgets every register, so every op allocates
//     its output anew on every run: on the gorgonia path 19,500 allocations
//     (3.5 MiB) per training step at bench size S, 87,000 (270 MiB) at L4.
//     Here Reset does nothing and a reusing op allocates no output: 18,000
//     (1.6 MiB) at S, 79,000 (57 MiB) at L4 (cmd/bench, on the project's
//     engine). Most allocations
//     left are BatchedMatMul's views and shapes for each (batch, head)
//     product, and the outputs of the ops without UsePreallocDo (Transpose,
//     Slice, the element-wise unary ops).
//
//   - Every op node keeps its own value, where the TapeMachine's register
//     allocation lets nodes share memory within a run: at L4 the gorgonia
//     path's values take 430 MiB (the fused path's 140 MiB), and the
//     process peaks at about 950 MiB instead of 650 MiB. Time moved less
//     than the allocations (model.BenchmarkLeanMachine: about 25% less CPU per
//     run at S on the gorgonia path, 10% on the fused one; at L4 within
//     the noise on both): the TapeMachine's sharing kept its working set
//     small, and Gorgonia's ops spend their time in copies and iterators
//     more than in allocating. A graph run once, and a training step
//     (package train), take NewOneShotMachine, which hands each value's
//     memory on after its last reader, as the TapeMachine's registers do,
//     and to the next run.
//
//   - An op's value is reused only when it is memory of its own: a
//     contiguous *tensor.Dense that overlaps none of the op's inputs. An op
//     whose Do returns a view of its input (Reshape's ShallowClone, a Repeat
//     of 1 returns its input itself) runs Do every time, so a view always
//     follows the current memory of what it views and no input is written.
//
//   - Gorgonia's element-wise ops, its matrix products (GEMM with beta 0
//     never reads C) and Repeat write every element of the value they are
//     handed (overwritesAll). Any other UsePreallocDoer gets its value
//     zeroed first: a TapeMachine hands such ops a fresh zeroed tensor, and
//     some add into it (the gradient of Slice, sliceIncrOp, does +=).
//
//   - When an op's UsePreallocDo fails, the op falls back to Do, as the
//     TapeMachine does, and keeps to Do from then on (shapes are static,
//     so it would fail again).
//
//   - No UnsafeDo: the TapeMachine lets an op overwrite an input whose
//     register it inherits, which is why it must copy the values callers
//     watch (TraceExec). Here no op writes into another node's value, so
//     the nodes callers read (outputs) are bound to the machine's values
//     with UnsafeLet, no copy (the lean TapeMachine copied every gradient
//     and the logits: 3.5 MB per step at L4).
//
//   - RunAll runs the ops on the calling goroutine: the TapeMachine's
//     locks its OS thread and starts a goroutine per run, and handing work
//     between the two cost about 30% of a batch-1 decoding step. (The
//     gorgonia path's batch-1 decoding step of sort's model, which ran on a
//     TapeMachine, went from about 1.5 ms to 0.4-0.5 ms on this machine.)
//
//   - Every value gets this package's tensor engine (Engine, through Set)
//     where a TapeMachine gives Gorgonia's StandardEngine: the same ops,
//     with Transpose, Repeat and float32 element-wise arithmetic moving
//     whole runs instead of one element at a time (on the gorgonia path
//     about a third less time per training step at sort and L4).
//
// The results are the TapeMachine's bit for bit on the model's graphs
// (model.TestLeanMachineMatchesTapeMachine). A value (read through Value or
// a bound node) belongs to the machine and stays valid until the next run.
// After a failed run the values are not to be read (the ops after the
// failing one keep the previous run's); the next RunAll starts again from
// the first op. An op that transposes an input in place for a product
// (linAlgBinOp's transA, transB) puts it back before returning, so a value
// read by several ops is the same for each. One goroutine at a time, as any
// VM.
type Machine struct {
	ops   []*gorgonia.Node
	kids  [][]*gorgonia.Node     // each op's inputs, in order
	from  [][]int                // each input's position in ops, or -1 for a node without an op (read its Value)
	index map[*gorgonia.Node]int // op node -> position in ops
	args  [][]gorgonia.Value     // each op's input values, reused
	vals  []gorgonia.Value       // each op's output of the last run
	reuse []reuse                // how each op is handed its last value
	own   []bool                 // each op's last value is memory of its own
	bind  []bool                 // each op's value is bound to its node after each run
	// lastUse is, in one-shot mode (NewOneShotMachine), the position of
	// the last op that reads each op's value, or -1 for a value the run
	// must keep (a bound output); nil in the default mode, which keeps
	// every value.
	lastUse []int
	free    map[freeKey][]*tensor.Dense // in one-shot mode, values let go of that a later op may write into
	wanted  map[freeKey]int             // in one-shot mode, how many free tensors of each key the run's ops asked for
}

// reuse is how an op node is handed its previous value.
type reuse uint8

const (
	reuseNever     reuse = iota // no UsePreallocDo, or it failed once: Do
	reuseOverwrite              // UsePreallocDo writes every element: hand it over as it is
	reuseZeroed                 // UsePreallocDo may read what it is handed: zero it first
)

// overwritesAll names (reflect's Type.String) Gorgonia v0.9.18's ops whose
// UsePreallocDo writes every element of the value it is handed: element-wise
// arithmetic (tensor's WithReuse), Mul, MatVecMul and BatchedMatMul (GEMM
// and GEMV with beta 0; Outer zeroes first) and Repeat.
// TestMachineReuseKinds pins the names: an op renamed by an upgrade would be
// zeroed before each run (slower, still right) rather than read stale.
var overwritesAll = map[string]bool{
	"gorgonia.elemBinOp":   true,
	"gorgonia.linAlgBinOp": true,
	"*gorgonia.repeatOp":   true,
}

// reuseOf is how op is handed its previous value.
func reuseOf(op gorgonia.Op) reuse {
	if _, ok := op.(gorgonia.UsePreallocDoer); !ok {
		return reuseNever
	}
	if overwritesAll[reflect.TypeOf(op).String()] {
		return reuseOverwrite
	}
	return reuseZeroed
}

// NewMachine prepares g's op nodes in the order they run; after each run
// the values of the op nodes among outputs are bound to those nodes
// (gorgonia.UnsafeLet), so that outputs[i].Value() reads them.
func NewMachine(g *gorgonia.ExprGraph, outputs ...*gorgonia.Node) (*Machine, error) {
	sorted, err := gorgonia.Sort(g)
	if err != nil {
		return nil, errors.Wrap(err, "ordering the graph")
	}
	slices.Reverse(sorted) // Sort puts the roots first
	m := &Machine{index: map[*gorgonia.Node]int{}}
	for _, n := range sorted {
		if n.Op() == nil {
			continue // an input: its value is read at run time
		}
		m.index[n] = len(m.ops)
		m.ops = append(m.ops, n)
		var kids []*gorgonia.Node
		var from []int
		for it := g.From(n.ID()); it.Next(); {
			kid := it.Node().(*gorgonia.Node)
			j, ok := m.index[kid]
			if !ok {
				if kid.Op() != nil {
					return nil, errors.Errorf("%s reads %s, which comes later", n.Name(), kid.Name())
				}
				j = -1
			}
			kids, from = append(kids, kid), append(from, j)
		}
		m.kids, m.from = append(m.kids, kids), append(m.from, from)
		m.args = append(m.args, make([]gorgonia.Value, len(kids)))
		m.reuse = append(m.reuse, reuseOf(n.Op()))
	}
	for _, n := range sorted {
		if d, ok := n.Value().(*tensor.Dense); ok && n.Op() == nil {
			Set(d)
		}
	}
	m.vals = make([]gorgonia.Value, len(m.ops))
	m.own = make([]bool, len(m.ops))
	m.bind = make([]bool, len(m.ops))
	for _, n := range outputs {
		if i, ok := m.index[n]; ok {
			m.bind[i] = true
		} else if n.Op() != nil {
			return nil, errors.Errorf("output %s is not in the graph", n.Name())
		}
	}
	return m, nil
}

// RunAll computes every op node once.
func (m *Machine) RunAll() error {
	if m.lastUse != nil {
		defer m.trimFree()
	}
	for i, n := range m.ops {
		args := m.args[i]
		for k, j := range m.from[i] {
			if j >= 0 {
				args[k] = m.vals[j]
			} else {
				args[k] = m.kids[i][k].Value()
			}
		}
		if m.lastUse != nil {
			m.prealloc(i)
		}
		v, err := m.do(i, args)
		if err != nil {
			return errors.Wrapf(err, "%s (%v)", n.Name(), n.Op())
		}
		if d, ok := v.(*tensor.Dense); ok {
			Set(d)
		}
		m.vals[i] = v
		m.own[i] = owns(v, args)
		if m.bind[i] && n.Value() != v {
			if err := gorgonia.UnsafeLet(n, v); err != nil {
				return errors.Wrapf(err, "binding the value of %s", n.Name())
			}
		}
		if m.lastUse != nil {
			m.releaseAfter(i)
		}
	}
	return nil
}

// do runs op i on args, into its last value when it may.
func (m *Machine) do(i int, args []gorgonia.Value) (gorgonia.Value, error) {
	op := m.ops[i].Op()
	if m.reuse[i] != reuseNever && m.own[i] {
		last := m.vals[i].(*tensor.Dense) // owns checked that
		if m.reuse[i] == reuseZeroed {
			last.Zero()
		}
		if v, err := op.(gorgonia.UsePreallocDoer).UsePreallocDo(last, args...); err == nil {
			return v, nil
		}
		m.reuse[i] = reuseNever
	}
	return op.Do(args...)
}

// owns says whether v is a contiguous dense tensor whose memory overlaps
// none of args: a value its op may be handed back to write into.
func owns(v gorgonia.Value, args []gorgonia.Value) bool {
	d, ok := v.(*tensor.Dense)
	if !ok || d.IsMaterializable() || d.MemSize() == 0 {
		return false
	}
	for _, a := range args {
		if a != nil && overlap(d, a) {
			return false
		}
	}
	return true
}

// overlap says whether a's memory and d's share a byte.
func overlap(d *tensor.Dense, a gorgonia.Value) bool {
	if d.MemSize() == 0 || a.MemSize() == 0 {
		return false
	}
	lo, alo := d.Uintptr(), a.Uintptr()
	return alo < lo+d.MemSize() && lo < alo+a.MemSize()
}

// Reset does nothing: the values stay for the next run to reuse, and
// RunAll always starts from the first op.
func (m *Machine) Reset() {}

// Close lets go of the values the machine holds (the nodes bound to them
// keep theirs) and, in one-shot mode, of the memory it keeps to hand on; a
// later RunAll allocates them again.
func (m *Machine) Close() error {
	clear(m.vals)
	clear(m.own)
	clear(m.free)
	for _, args := range m.args {
		clear(args)
	}
	return nil
}

// Value is n's value: its output of the last run for an op node, its own
// value for an input. Unlike a node bound as an output, it reads any node
// (in one-shot mode, nil for a node whose value was let go of).
func (m *Machine) Value(n *gorgonia.Node) gorgonia.Value {
	if i, ok := m.index[n]; ok {
		return m.vals[i]
	}
	return n.Value()
}
