// Package graphtest holds the helpers the tests of layers, internal/ops,
// internal/engine and model share: random tensors, running a graph, reading node values as
// float64, comparing them, checking gradients against central
// differences, float64 references of steps more than one package's tests
// compute (the norms), and the MLP activations' textbook formulas the
// references use. It is imported by tests only.
package graphtest
