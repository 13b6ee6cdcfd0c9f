// Package graphtest holds the helpers the tests of layers, internal/ops,
// internal/engine and model share: random tensors, running a graph, reading node values as
// float64, comparing them, checking gradients against central
// differences, and float64 references of steps more than one package's
// tests compute (RMSNorm). It is imported by tests only.
package graphtest
