package htmlview

import (
	"encoding/base64"
	"encoding/binary"
	"math"
)

// EncodeMap is one head's attention weights [query][key] as the page
// carries them: the causal lower triangle row by row (query q's keys 0..q),
// each weight a little-endian float32, in standard base64. The page decodes
// a head only when it draws it, so its cost grows with the heads on screen,
// not with the heads of the model; and a weight takes 2.7 bytes of the page
// where JSON's decimal took about 7 with the masked zeros.
func EncodeMap(m [][]float64) string {
	buf := make([]byte, 0, 4*len(m)*(len(m)+1)/2)
	for q, row := range m {
		for _, w := range row[:min(q+1, len(row))] {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(float32(w)))
		}
	}
	return base64.StdEncoding.EncodeToString(buf)
}

// DecodeMap is EncodeMap's inverse for a sequence of t tokens: the full
// [query][key] matrix, zero above the diagonal. It reports false when s is
// not such a map.
func DecodeMap(s string, t int) ([][]float64, bool) {
	buf, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(buf) != 4*t*(t+1)/2 {
		return nil, false
	}
	m := make([][]float64, t)
	for q := range m {
		m[q] = make([]float64, t)
		for k := range q + 1 {
			m[q][k] = float64(math.Float32frombits(binary.LittleEndian.Uint32(buf)))
			buf = buf[4:]
		}
	}
	return m, true
}

// ThumbSide is the most cells a side of a grid thumbnail has: a longer
// sequence's map is binned to fit (EncodeThumb).
const ThumbSide = 32

// MaskedByte is a thumbnail cell whose every key is masked.
const MaskedByte = 255

// EncodeThumb is one head's attention weights [query][key] as the grid
// draws them past ThumbSide positions: binned to k x k positions a cell, k
// the fewest that fit ThumbSide a side, each cell the queries' mean share
// of attention to its keys (as the terminal bins, render.Panel.Binned) in
// one byte, the share x 254 rounded, or MaskedByte where every key of the
// cell is masked (after each of its queries, or window or more positions
// before them; window 0 is none); row by row, in standard base64. At 256
// tokens a head is 1,024 bytes where its map (EncodeMap) is 131,584.
func EncodeThumb(m [][]float64, window int) string {
	t := len(m)
	k := (t + ThumbSide - 1) / ThumbSide
	n := (t + k - 1) / k
	cells := make([]float64, n*n)
	for q, row := range m {
		queries := min(t, (q/k+1)*k) - q/k*k
		for key, w := range row {
			cells[q/k*n+key/k] += w / float64(queries)
		}
	}
	out := make([]byte, n*n)
	for i := range n {
		for j := range n {
			out[i*n+j] = byte(math.Round(254 * min(1, max(0, cells[i*n+j]))))
			firstQuery, lastKey := i*k, min(t, (j+1)*k)-1
			if j > i || (window > 0 && lastKey <= firstQuery-window) {
				out[i*n+j] = MaskedByte
			}
		}
	}
	return base64.StdEncoding.EncodeToString(out)
}
