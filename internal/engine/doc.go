// Package engine holds the tensor engine this project runs Gorgonia's own
// ops with, and Machine, the VM that runs a graph on it (it sets the engine
// on every value, as a TapeMachine sets Gorgonia's StandardEngine).
// Machine came here from package model, which builds its graphs
// (Graph.NewLeanMachine, Graph.NewOneShotMachine, Decoder) but owns nothing
// of how they run; like
// every internal package, engine imports nothing of the domain, so its tests
// run on small hand-built graphs and the check against a TapeMachine on the
// model's own graphs stays in model (TestLeanMachineMatchesTapeMachine).
//
// Gorgonia's ops do their arithmetic through the engine of the tensors they
// are handed (tensor.Engine: Transpose, Repeat, Add, ...), the way they do
// their matrix products through the BLAS gorgonia.Use installs. Engine is
// Gorgonia's StandardEngine with what the gorgonia path spends most in
// outside its products done a run or eight lanes at a time:
//   - Transpose (the head split and merge, and their gradients), which the
//     StandardEngine does one element at a time through tensor's
//     FlatIterator;
//   - Repeat and RepeatReuse (every broadcast: the biases, LayerNorm's row
//     statistics and affine weights), which tensor's StdEng copies run by
//     run down to single elements;
//   - float32 Add, Sub, Mul, Div and MulScalar (LayerNorm, GELU, the
//     residuals and their gradients) in the eight-lane loops of package
//     kernels, where StdEng does one element per iteration.
//   - MatMul, which BatchedMatMul calls once per (batch, head) pair: the
//     same call into the BLAS Gorgonia uses, without StdEng's checks and
//     its boxed copy of the first operand's slice header (two allocations
//     per pair).
//
// Conventions: the ops, their graphs and their gradients stay Gorgonia's;
// only how the loops run changes, never a value. Each method takes the
// fast loop only for what it was written for (a contiguous *tensor.Dense in
// row-major order: float32 or float64 for the copies, one repeat count;
// float32 of one shape, or times a scalar, for the arithmetic, into a new
// tensor, the reuse tensor or the first operand; float32 matrices read as
// they are or transposed for MatMul) and hands everything else
// (incrementing, broadcasting, other types) to the StandardEngine. The
// values are the StandardEngine's bit for bit
// (TestEngineTransposeAndRepeat, TestEngineArithmeticMatchesStandardEngine,
// TestEngineMatMul),
// except where tensor's own Repeat is wrong (TestUpstreamRepeatOfOne).
package engine
