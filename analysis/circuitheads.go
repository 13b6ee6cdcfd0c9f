package analysis

import (
	"fmt"

	"github.com/pkg/errors"
	"gonum.org/v1/gonum/mat"

	"github.com/attnscope/attnscope/model"
)

// Heads reads every head's factors from the model (HeadsOf every layer and
// head).
func Heads(m *model.Model) ([][]Head, error) {
	return HeadsOf(m, count(m.Config.Layers), count(m.Config.Heads))
}

// count is 0, ..., n-1.
func count(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// HeadsOf reads the factors of the heads picked, [picked layer][picked
// head], layers and heads ascending: only their rows of the attention
// matrices, widened to float64 a head's slice at a time (a mapped BF16
// model's other weights stay in the file, so an 8B model's heads cost a
// few MB each, not its 17.8 GiB of attention matrices as float64).
// Grouped-query heads share their key/value head's W_K and W_V; a latent's
// keys and values are its up-projections of the down-projection (read
// whole: the latent models are small).
func HeadsOf(m *model.Model, layers, heads []int) ([][]Head, error) {
	cfg := m.Config
	for _, l := range layers {
		if l < 0 || l >= cfg.Layers {
			return nil, errors.Errorf("layer %d: the model has %d layers", l, cfg.Layers)
		}
	}
	for _, h := range heads {
		if h < 0 || h >= cfg.Heads {
			return nil, errors.Errorf("head %d: the model has %d heads a layer", h, cfg.Heads)
		}
	}
	var out [][]Head
	for _, l := range layers {
		layer, err := layerHeads(m, l, heads)
		if err != nil {
			return nil, err
		}
		out = append(out, layer)
	}
	return out, nil
}

// layerHeads is the factors of heads of layer l.
func layerHeads(m *model.Model, l int, heads []int) ([]Head, error) {
	cfg := m.Config
	d, dm := cfg.DHead(), cfg.DModel
	p := fmt.Sprintf("blocks.%d.attn.", l)
	o, err := headColumns(m, p+"out.weight", heads, d) // [picked] (D, d)
	if err != nil {
		return nil, err
	}
	var out []Head
	if cfg.KVLatent > 0 {
		q, err := paramMatrix(m, p+"q.weight", 0, -1)
		if err != nil {
			return nil, err
		}
		down, err := paramMatrix(m, p+"kv_down.weight", 0, -1)
		if err != nil {
			return nil, err
		}
		up, err := paramMatrix(m, p+"kv_up.weight", 0, -1)
		if err != nil {
			return nil, err
		}
		var kv mat.Dense
		kv.Mul(up, down) // (2D, D)
		for i, h := range heads {
			out = append(out, Head{Layer: l, Index: h, Q: rows(q, h*d, d), K: rows(&kv, h*d, d), V: rows(&kv, dm+h*d, d), O: o[i]})
		}
		return out, nil
	}
	g, q := cfg.KVHeadCount(), cfg.Heads*d // q rows H*d: D unless head_dim sets d apart
	per := cfg.Heads / g
	for i, h := range heads {
		kv := h / per
		wq, err := paramMatrix(m, p+"qkv.weight", h*d, (h+1)*d)
		if err != nil {
			return nil, err
		}
		wk, err := paramMatrix(m, p+"qkv.weight", q+kv*d, q+(kv+1)*d)
		if err != nil {
			return nil, err
		}
		wv, err := paramMatrix(m, p+"qkv.weight", q+g*d+kv*d, q+g*d+(kv+1)*d)
		if err != nil {
			return nil, err
		}
		out = append(out, Head{Layer: l, Index: h, Q: wq, K: wk, V: wv, O: o[i]})
	}
	return out, nil
}

// headColumns is, for each head picked, its d columns of the matrix name
// (D, H*d): W_O's slice of that head, read a chunk of rows at a time.
func headColumns(m *model.Model, name string, heads []int, d int) ([]*mat.Dense, error) {
	out := make([]*mat.Dense, len(heads))
	return out, paramRows(m, name, 0, -1, func(r int, row []float64) {
		for i, h := range heads {
			if out[i] == nil {
				out[i] = mat.NewDense(paramShape(m, name)[0], d, nil)
			}
			out[i].SetRow(r, row[h*d:(h+1)*d])
		}
	})
}

// paramMatrix is rows [r0, r1) of the 2-D parameter name as float64 (r1 -1:
// to its last row).
func paramMatrix(m *model.Model, name string, r0, r1 int) (*mat.Dense, error) {
	shape := paramShape(m, name)
	if shape == nil {
		return nil, errors.Errorf("the model has no tensor %s", name)
	}
	if r1 < 0 {
		r1 = shape[0]
	}
	out := mat.NewDense(r1-r0, shape[1], nil)
	return out, paramRows(m, name, r0, r1, func(r int, row []float64) { out.SetRow(r-r0, row) })
}

// paramShape is the (rows, cols) of the 2-D parameter name, nil when the
// model has none.
func paramShape(m *model.Model, name string) []int {
	if s := m.Stored(name); s != nil {
		return []int{s.Rows, s.Cols}
	}
	for _, p := range m.Params {
		if p.Name == name && p.Value != nil && p.Value.Dims() == 2 {
			return p.Value.Shape().Clone()
		}
	}
	return nil
}

// paramRowChunk is how many rows of a stored matrix paramRows widens at
// once: 1 MB of float32 at an 8B model's width.
const paramRowChunk = 64

// paramRows calls each(r, row) with rows r0 <= r < r1 of the 2-D parameter
// name (r1 -1: to its last row) as float64, exactly: a float32 or float64
// tensor's values, or a stored one's widened a chunk of rows at a time
// (the row slice is reused between calls).
func paramRows(m *model.Model, name string, r0, r1 int, each func(r int, row []float64)) error {
	shape := paramShape(m, name)
	if shape == nil {
		return errors.Errorf("the model has no tensor %s", name)
	}
	if r1 < 0 {
		r1 = shape[0]
	}
	cols := shape[1]
	row := make([]float64, cols)
	if s := m.Stored(name); s != nil {
		buf := make([]float32, paramRowChunk*cols)
		for lo := r0; lo < r1; lo += paramRowChunk {
			hi := min(r1, lo+paramRowChunk)
			if err := s.WidenRows(buf, lo, hi); err != nil {
				return errors.Wrap(err, name)
			}
			for r := lo; r < hi; r++ {
				widenInto(row, buf[(r-lo)*cols:(r-lo+1)*cols])
				each(r, row)
			}
		}
		return nil
	}
	switch v := m.Param(name).Data().(type) {
	case []float32:
		for r := r0; r < r1; r++ {
			widenInto(row, v[r*cols:(r+1)*cols])
			each(r, row)
		}
	case []float64:
		for r := r0; r < r1; r++ {
			copy(row, v[r*cols:(r+1)*cols])
			each(r, row)
		}
	default:
		return errors.Errorf("%s holds %T: want float32 or float64", name, v)
	}
	return nil
}

// widenInto sets dst to src in float64.
func widenInto(dst []float64, src []float32) {
	for i, x := range src {
		dst[i] = float64(x)
	}
}
