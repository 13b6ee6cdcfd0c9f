package model

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/engine"
)

// leanMachine is engine's Machine for g made by newMachine
// (engine.NewMachine or NewOneShotMachine), binding outputs, or, when g
// cannot have one, a VM whose every run returns why: NewLeanMachine returns
// no error of its own.
func leanMachine(newMachine func(*gorgonia.ExprGraph, ...*gorgonia.Node) (*engine.Machine, error), g *gorgonia.ExprGraph, outputs ...*gorgonia.Node) gorgonia.VM {
	m, err := newMachine(g, outputs...)
	if err != nil {
		return brokenMachine{errors.Wrap(err, "lean machine")}
	}
	return m
}

// brokenMachine is the VM of a graph a machine could not be made for: every
// run returns the reason.
type brokenMachine struct{ err error }

func (b brokenMachine) RunAll() error { return b.err }
func (brokenMachine) Reset()          {}
func (brokenMachine) Close() error    { return nil }
