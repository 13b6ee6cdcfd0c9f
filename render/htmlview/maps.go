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
