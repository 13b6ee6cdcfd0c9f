package model

import (
	"slices"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
)

// sequence runs a graph by calling each op node's Do in topological order,
// as a TapeMachine does, without TapeMachine.RunAll's cost per run: RunAll
// locks its OS thread and starts a goroutine each time, and handing work
// between the two threads took about 30% of a batch-1 decoding step (a few
// tens of microseconds). It is for graphs of internal/ops' ops alone, whose
// Do writes a buffer the op owns: no values to allocate or free, nothing
// to differentiate.
type sequence struct {
	ops   []*gorgonia.Node
	kids  [][]*gorgonia.Node     // each op's inputs, in order
	index map[*gorgonia.Node]int // op node -> position in ops
	args  [][]gorgonia.Value     // each op's input values, reused
	vals  []gorgonia.Value       // each op's output of the last run
}

func newSequence(g *gorgonia.ExprGraph) (*sequence, error) {
	sorted, err := gorgonia.Sort(g)
	if err != nil {
		return nil, errors.Wrap(err, "ordering the graph")
	}
	slices.Reverse(sorted) // Sort puts the roots first
	s := &sequence{index: map[*gorgonia.Node]int{}}
	for _, n := range sorted {
		if n.Op() == nil {
			continue // an input: its value is read at run time
		}
		s.index[n] = len(s.ops)
		s.ops = append(s.ops, n)
		var kids []*gorgonia.Node
		for it := g.From(n.ID()); it.Next(); {
			kids = append(kids, it.Node().(*gorgonia.Node))
		}
		s.kids = append(s.kids, kids)
		s.args = append(s.args, make([]gorgonia.Value, len(kids)))
	}
	s.vals = make([]gorgonia.Value, len(s.ops))
	return s, nil
}

// run computes every op node once.
func (s *sequence) run() error {
	for i, n := range s.ops {
		for k, c := range s.kids[i] {
			if j, ok := s.index[c]; ok {
				s.args[i][k] = s.vals[j]
			} else {
				s.args[i][k] = c.Value()
			}
		}
		v, err := n.Op().Do(s.args[i]...)
		if err != nil {
			return errors.Wrapf(err, "%s", n.Name())
		}
		s.vals[i] = v
	}
	return nil
}

// value is n's value: its output of the last run for an op node, its own
// value for an input.
func (s *sequence) value(n *gorgonia.Node) gorgonia.Value {
	if i, ok := s.index[n]; ok {
		return s.vals[i]
	}
	return n.Value()
}
