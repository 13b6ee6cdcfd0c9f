// Package graphtest holds the helpers the tests of layers, internal/ops,
// internal/engine and model share: random tensors, running a graph, reading node values as
// float64, comparing them, and checking gradients against central
// differences. It is imported by tests only.
package graphtest
