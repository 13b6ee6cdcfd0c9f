package train

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
)

// BenchmarkStep times one training step (batch, forward, backward, clip,
// Adam) at the benchmark's sizes (cmd/bench): S and M, attention-only one
// layer models on the repeat task; sort, configs/sort.yaml itself (two pre-LN
// blocks with GELU MLPs); L4, four such blocks of width 128 on repeat.
func BenchmarkStep(b *testing.B) {
	for _, size := range []struct {
		name string
		yml  string
	}{
		{"S_B32_T12_D32_H4", attnOnly(32, 12, 32, 4)},
		{"M_B64_T64_D128_H8", attnOnly(64, 64, 128, 8)},
		{"sort_B32_T16_D64_H4_L2", ""},
		{"L4_B16_T64_D128_H8_L4", l4YAML},
	} {
		b.Run(size.name, func(b *testing.B) {
			var cfg rundir.Config
			var err error
			if size.yml == "" {
				cfg, err = rundir.LoadConfig("../configs/sort.yaml", []string{"train.steps=1000000", "train.eval_every=0", "train.checkpoint_every=0"})
			} else {
				cfg, err = rundir.ParseConfig("bench.yaml", []byte(size.yml), nil)
			}
			if err != nil {
				b.Fatal(err)
			}
			r := prepareBench(b, cfg)
			batch := data.NewBatch(cfg.Train.BatchSize, r.task.SeqLen())
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := data.Fill(r.task, batch, data.StepRNG(cfg.Seed, i+1)); err != nil {
					b.Fatal(err)
				}
				if err := r.graph.Feed(batch.Tokens, batch.Targets, batch.Mask); err != nil {
					b.Fatal(err)
				}
				if _, _, err := r.step(i + 1); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
		})
	}
}

// l4YAML is the benchmark's L4 size: four full blocks of width 128 on repeat.
const l4YAML = "task: {name: repeat, length: 64, symbols: 64}\n" +
	"model: {d_model: 128, heads: 8, layers: 4, mlp: true, d_ff: 512, out_bias: true}\n" +
	"train: {batch_size: 16, steps: 1000000, eval_every: 0, checkpoint_every: 0}\n"

// prepareBench prepares a run of cfg in a temporary directory, closed when
// the benchmark ends.
func prepareBench(b *testing.B, cfg rundir.Config) *runner {
	b.Helper()
	r, err := prepare(context.Background(), cfg, Options{Dir: b.TempDir(), Probes: analysisProbes})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(r.close)
	return r
}

// attnOnly is the config of a one-layer attention-only model on the repeat
// task (T = length).
func attnOnly(batch, t, d, h int) string {
	return fmt.Sprintf("task: {name: repeat, length: %d, symbols: 64}\nmodel: {d_model: %d, heads: %d, layers: 1}\n"+
		"train: {batch_size: %d, steps: 1000000, eval_every: 0, checkpoint_every: 0}\n", t, d, h, batch)
}

// BenchmarkEvaluation times what cmd/train does at each evaluation of
// configs/induction.yaml, the two parts interleaved so that both see the
// same machine load: the held-out loss and accuracies on its 1000 rows
// (eval-ms), and the head roles on runlog.RoleRows of those rows (forward with
// the attention kept, copy, scoring: roles-ms), the cost roles.jsonl adds.
// roles/eval-% is their ratio.
func BenchmarkEvaluation(b *testing.B) {
	cfg, err := rundir.LoadConfig("../configs/induction.yaml", nil)
	if err != nil {
		b.Fatal(err)
	}
	r := prepareBench(b, cfg)
	var eval, roles time.Duration
	for range b.N {
		start := time.Now()
		if _, err := r.eval.run(1); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if _, err := r.probes[0].Measure(1); err != nil { // the head roles
			b.Fatal(err)
		}
		eval, roles = eval+mid.Sub(start), roles+time.Since(mid)
	}
	b.ReportMetric(eval.Seconds()*1e3/float64(b.N), "eval-ms")
	b.ReportMetric(roles.Seconds()*1e3/float64(b.N), "roles-ms")
	b.ReportMetric(100*roles.Seconds()/eval.Seconds(), "roles/eval-%")
}

// optimizerBench is a model of the sort config (~103k parameters) or of the
// L4 benchmark size (~825k) with the dtype Run trains in, and gradients of
// the same shapes whose values are drawn at the scale of a training step's.
type optimizerBench struct {
	name   string
	params []model.Param
	grads  []*tensor.Dense
}

func optimizerBenches(b *testing.B) []optimizerBench {
	b.Helper()
	var out []optimizerBench
	for _, size := range []struct{ name, yml string }{{"sort", ""}, {"L4", l4YAML}} {
		var cfg rundir.Config
		var err error
		if size.yml == "" {
			cfg, err = rundir.LoadConfig("../configs/sort.yaml", nil)
		} else {
			cfg, err = rundir.ParseConfig("bench.yaml", []byte(size.yml), nil)
		}
		if err != nil {
			b.Fatal(err)
		}
		m, err := model.New(cfg.Model, modelDtype, 1)
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		n := 0
		var grads []*tensor.Dense
		for _, p := range m.Params {
			grads = append(grads, denseOf(modelDtype, p.Value.Shape(), randomValues(rng, p.Value.Shape().TotalSize(), 1e-3)))
			n += p.Value.Shape().TotalSize()
		}
		out = append(out, optimizerBench{fmt.Sprintf("%s_%dk", size.name, n/1000), m.Params, grads})
	}
	return out
}

// BenchmarkAdam times one AdamW update of the sort and L4 models, with
// float64 moments (a lab run's) and float32 ones (a fine-tuning run's).
func BenchmarkAdam(b *testing.B) {
	for _, o := range optimizerBenches(b) {
		for _, moments := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			b.Run(fmt.Sprintf("%s_m%v", o.name, moments), func(b *testing.B) {
				adam := NewAdam(o.params, moments, 0.9, 0.95, 1e-8, 0.01)
				b.ReportAllocs()
				for b.Loop() {
					if err := adam.Update(o.params, o.grads, 3e-4); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkClipGlobalNorm times the global norm alone (norm: below the
// limit) and with the scaling (clip: each call scales to 0.9999 of the last
// norm, slowly enough that the values stay far from float32's subnormals).
func BenchmarkClipGlobalNorm(b *testing.B) {
	for _, o := range optimizerBenches(b) {
		b.Run(o.name+"/norm", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ClipGlobalNorm(o.grads, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(o.name+"/clip", func(b *testing.B) {
			limit, err := ClipGlobalNorm(o.grads, 0)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				limit *= 0.9999
				if _, err := ClipGlobalNorm(o.grads, limit); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
