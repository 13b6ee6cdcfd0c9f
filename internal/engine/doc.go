// Package engine holds the tensor engine this project's machines run
// Gorgonia's own ops with (model.Graph's machines set it on every value, as
// a TapeMachine sets Gorgonia's StandardEngine).
//
// Gorgonia's ops do their arithmetic through the engine of the tensors they
// are handed (tensor.Engine: Transpose, Repeat, Add, ...), the way they do
// their matrix products through the BLAS gorgonia.Use installs. Engine is
// Gorgonia's StandardEngine with the two data movements the gorgonia
// attention path spends most in outside its products done by loops that
// copy whole runs:
//   - Transpose (the head split and merge, and their gradients), which the
//     StandardEngine does one element at a time through tensor's
//     FlatIterator;
//   - Repeat and RepeatReuse (every broadcast: the biases, LayerNorm's row
//     statistics and affine weights), which tensor's StdEng copies run by
//     run down to single elements.
//
// Conventions: the ops, their graphs and their gradients stay Gorgonia's;
// only how the data is moved changes, never a value. Each method takes the
// fast loop only for what it was written for (a contiguous float32 or
// float64 *tensor.Dense in row-major order, one repeat count) and hands
// everything else to the StandardEngine; either way the result is the
// StandardEngine's, element for element (TestEngineMatchesStandardEngine).
package engine
