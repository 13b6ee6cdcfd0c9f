package model

import (
	"math"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func smallConfig(mlp bool) Config {
	return Config{Vocab: 7, Context: 5, DModel: 8, Heads: 2, Layers: 2, MLP: mlp, DFF: 12,
		QKVBias: true, OutBias: true, LMBias: true, Dropout: 0.1}
}

func TestBuildSmoke(t *testing.T) {
	for _, mlp := range []bool{false, true} {
		m, err := New(smallConfig(mlp), tensor.Float64, 1)
		if err != nil {
			t.Fatal(err)
		}
		g, err := Build(m, BuildOptions{Batch: 2, SeqLen: 4, Train: true, KeyPadding: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Feed([]int{1, 2, 3, 4, 5, 6, 0, 1}, []int{2, 3, 4, 5, 6, 0, 1, 2}, []float64{1, 1, 1, 1, 1, 1, 1, 1}); err != nil {
			t.Fatal(err)
		}
		vm := g.NewMachine()
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		loss := g.Loss.Value().Data().(float64)
		t.Logf("mlp=%v loss %v ln V %v", mlp, loss, math.Log(7))
		grads, err := g.Gradients()
		if err != nil {
			t.Fatal(err)
		}
		t.Log(len(grads), grads[0].Shape())
		_ = gorgonia.Nodes{}
	}
}
