// Package graphtest holds the helpers the tests of layers, internal/ops,
// internal/engine, model and rundir share: random tensors, setting and
// reading their values as float64, running a graph, comparing values, and
// checking gradients against central differences. It is imported by tests
// only.
package graphtest
