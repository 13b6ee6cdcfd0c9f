package layers

import (
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/ops"
)

// CrossEntropy is the training loss: the mean over scored positions of
// -log softmax(logits[n])[targets[n]], for logits (N, V), Int targets (N) and
// a mask (N) weighting each position (0 leaves it out). It is ops.CrossEntropy
// on both paths, because Gorgonia's LogSoftMax is wrong along the last axis
// (docs/gorgonia.md).
func CrossEntropy(logits, targets, mask *gorgonia.Node) (*gorgonia.Node, error) {
	return ops.CrossEntropy(logits, targets, mask) // scalar
}
