package model

import (
	"fmt"
	"strings"

	"github.com/attnscope/attnscope/internal/msg"
)

// TrainReplicas is how many parts package train splits a training batch
// into (train.Replicas, one per core of the two-core machines this project
// is measured on): each part holds a gradient of every weight.
const TrainReplicas = 2

// TrainMemory is where a float32 training run (package train) puts its
// memory, in bytes, part by part (Config.TrainMemory).
type TrainMemory struct {
	Weights float64 // the weights held (HeldParamCount), float32
	// Gradients are the parts' gradients of every weight: one set per
	// replica, the whole batch's sum written over the first part's.
	Gradients float64
	Replicas  int     // the parts the gradients are counted for
	Moments   float64 // Adam's two moments (train.Adam), float32 or float64
	// Activations are the forward values a training step keeps for its
	// backward pass, all at once at the step's peak (the one-shot machine
	// lets each go after its last reader, in the backward pass).
	Activations float64
	// Logits are the loss's (B·T, V) tensors live at once: the logits, their
	// softmax and the two gradients.
	Logits float64
	// Copies are, with the LM head tied to the token embedding, the head's
	// (V, D) share of the embedding's gradient, which each part computes
	// first in its backward pass and holds, beside the activations, until
	// the lookup's share is added to it at the end. An untied model's two
	// (V, D) gradients are the gradients themselves.
	Copies float64
	// Eval is the evaluation graph's peak on its one-shot machine: its
	// logits and one block's values.
	Eval float64
}

// Total is the sum of the parts.
func (m TrainMemory) Total() float64 {
	return m.Weights + m.Gradients + m.Moments + m.Activations + m.Logits + m.Copies + m.Eval
}

// String is the estimate in one line: "4.5 GiB: weights 475 MiB, ...".
func (m TrainMemory) String() string {
	parts := []string{
		"weights " + msg.Bytes(m.Weights),
		fmt.Sprintf("gradients %s (%d replicas)", msg.Bytes(m.Gradients), m.Replicas),
		"Adam moments " + msg.Bytes(m.Moments),
		"activations " + msg.Bytes(m.Activations),
		"logits " + msg.Bytes(m.Logits),
	}
	if m.Copies > 0 {
		parts = append(parts, "the tied head's gradient "+msg.Bytes(m.Copies))
	}
	if m.Eval > 0 {
		parts = append(parts, "evaluation "+msg.Bytes(m.Eval))
	}
	return msg.Bytes(m.Total()) + ": " + strings.Join(parts, ", ")
}

// TrainMemory estimates where training this model in float32 puts its
// memory (package train: the batch of trainBatch sequences in
// min(TrainReplicas, trainBatch) parts, each on a one-shot machine; an
// evaluation graph of evalBatch sequences, 0 for none; Adam's moments of
// momentBytes a value, 4 or 8). Vocab and Context
// must be set. The activations are EstimateBytes' forward counts without
// the logits, counted once: a step keeps its forward values until the
// backward pass reads them, and the backward pass's own values live only
// a block at a time. On GPT-2 small's shape at batch 4 of 64 tokens the
// total is within 15% of the measured peak RSS (cmd/bench -configs gpt2,
// docs/benchmarks.md); the Go runtime's own memory and the garbage between
// collections are not counted.
func (c Config) TrainMemory(trainBatch, evalBatch, momentBytes int) TrainMemory {
	const elem = 4 // bytes of a float32
	held := c.HeldParamCount()
	replicas := max(1, min(TrainReplicas, trainBatch))
	t, d, v := float64(c.Context), float64(c.DModel), float64(c.Vocab)
	logits := func(batch int) float64 { return float64(batch) * t * v }
	copies := 0.0
	if c.TieEmbeddings {
		copies = 1
	}
	m := TrainMemory{
		Weights:   held * elem,
		Gradients: float64(replicas) * held * elem,
		Replicas:  replicas,
		Moments:   2 * held * float64(momentBytes),
	}
	if trainBatch > 0 {
		m.Activations = (c.forwardValues(trainBatch) - 4*logits(trainBatch)) * elem
		m.Logits = 4 * logits(trainBatch) * elem
		m.Copies = float64(replicas) * copies * v * d * elem
	}
	if evalBatch > 0 {
		one := c
		one.Layers = 1
		m.Eval = (one.forwardValues(evalBatch) - 2*logits(evalBatch)) * elem
	}
	return m
}
