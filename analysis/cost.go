package analysis

import (
	"time"

	"github.com/attnscope/attnscope/model"
)

// ModelledRate is the floating-point rate, in FLOP/s, a forward is
// estimated at when an analysis that runs one per head is weighed before
// it starts (Work.Time): about half the float32 GEMM peak of a 2-core
// AVX-512 machine (docs/benchmarks.md measures 176-200 GFLOP/s), which a
// forward of a few hundred tokens reaches with the fused path's GEMMs. It
// errs towards the fast side, so that what is refused would take at least
// that long.
const ModelledRate = 100e9

// MaxPerHeadTime is the longest per-head work an inspection starts: past
// it the work is refused before it begins, with the estimate.
const MaxPerHeadTime = time.Hour

// ForwardFLOPs is the floating-point work of one forward of cfg over
// tokens positions in sequences of t: the matrix products only (2 FLOP a
// multiply-add), per layer the query, key and value projections (keys and
// values of the key-value heads only), the output projection, the MLP's
// two matrices (three when gated) and the scores and weighted values of
// t/2 keys a query on average (causal); then the LM head.
func ForwardFLOPs(cfg model.Config, tokens, t int) float64 {
	n, d, dh := float64(tokens), float64(cfg.DModel), float64(cfg.DHead())
	heads, kv := float64(cfg.Heads), float64(cfg.KVHeadCount())
	layer := 2 * n * d * (heads*dh + 2*kv*dh) // q, k, v
	layer += 2 * n * heads * dh * d           // out
	if cfg.MLP {
		matrices := 2.0
		if cfg.Gated() {
			matrices = 3
		}
		layer += 2 * n * d * float64(cfg.DFF) * matrices
	}
	layer += 2 * 2 * n * heads * dh * float64(t) / 2 // q k^T and a v
	return float64(cfg.Layers)*layer + 2*n*d*float64(cfg.Vocab)
}

// Work is a stretch of forwards an analysis runs: Forwards of Tokens
// positions each, in sequences of Length.
type Work struct {
	Forwards, Tokens, Length int
}

// FLOPs is the work's ForwardFLOPs on cfg, every forward.
func (w Work) FLOPs(cfg model.Config) float64 {
	return float64(w.Forwards) * ForwardFLOPs(cfg, w.Tokens, w.Length)
}

// Time is how long the work is estimated to take at ModelledRate.
func (w Work) Time(cfg model.Config) time.Duration {
	return time.Duration(w.FLOPs(cfg) / ModelledRate * float64(time.Second))
}

// PrefixWork is the forwards PrefixMatching runs on n sequences of m's
// shape (prefixMatching's batches).
func PrefixWork(cfg model.Config, n int) Work {
	t := 2 * min(cfg.Context/2, MaxPrefixTokens)
	per := max(1, MaxPrefixBatchTokens/max(t, 1))
	return Work{Forwards: (n + per - 1) / per, Tokens: min(n, per) * t, Length: t}
}

// PatchWork is the forwards Patch runs for heads heads of cfg's model on
// n cached examples of t positions: the corrupted run, then one a head,
// and when it patches positions alone one a head and position.
func PatchWork(cfg model.Config, heads, n, t int) Work {
	n = PerHeadExamples(heads, n, t)
	per := 1
	if patchesPositions(cfg, heads, n, t) {
		per += t
	}
	return Work{Forwards: 1 + heads*per, Tokens: n * t, Length: t}
}

// AblationWork is the forwards ablation.Run runs for heads heads on a set
// of n sequences of t positions: the intact run, then one a head.
func AblationWork(heads, n, t int) Work {
	return Work{Forwards: 1 + heads, Tokens: n * t, Length: t}
}

// CircuitsBytes estimates, in bytes, what MeasureHeads and direct logit
// attribution hold at once on the heads of layers and heads: the picked
// heads' factors as float64 (HeadsOf), the largest composition of two
// consecutive picked layers (its float32 GEMM operands and products and
// the Gram matrices), copying's (the V x V circuits up to MaxCopyingVocab;
// then copyingByHead's blocks and sampled columns, or CopyingEigen's
// embeddings and W_E^T W_U
// in float64, with a float32 copy of each mapped one), and the
// attribution's one layer of W_O in float64 and its top tokens' logits.
// The run the analyses read and the logit lens's chunks are counted by
// the view's own estimate.
func CircuitsBytes(cfg model.Config, layers, heads []int) float64 {
	d, dm, v := float64(cfg.DHead()), float64(cfg.DModel), float64(cfg.Vocab)
	picked := float64(len(layers) * len(heads))
	nh := float64(len(heads))
	factors := 4 * picked * d * dm * 8
	var composition float64
	for i := 0; i+1 < len(layers); i++ {
		if layers[i+1] == layers[i]+1 {
			composition = 4*(2*dm*nh*d+3*nh*d*nh*d) + 4*nh*2*d*d*8
			break
		}
	}
	var copying float64
	switch {
	case cfg.Vocab <= MaxCopyingVocab:
		copying = 8 * (4*v*dm + 3*v*v)
	case byHeadCheaper(cfg, len(layers)*len(heads)):
		sample := float64(min(cfg.Vocab, MaxDiagonalSample))
		copying = 4*(2*copyingBlock*dm+2*copyingBlock*picked*d+2*dm*picked*d) + 12*picked*d*d
		copying += 4*sample*(dm+picked*d) + picked*(4*copyingBlock*sample+12*sample) // the diagonal's sampled columns and each head's scores of a block
	default:
		copying = 8 * (2*v*dm + dm*dm)
		if cfg.MappedWeights > 0 {
			copying += 4 * 2 * v * dm
		}
	}
	attribution := 8*dm*float64(cfg.Heads)*d + 12*float64(cfg.Heads)*v
	return factors + composition + copying + attribution
}
