package render

import (
	"bytes"
	"strings"
	"testing"
)

// TestLayerKindsInHeadTables: a local/global model's heads say whether
// their layer is local or global, in the line table (a kind column) and in
// the grid of many heads (after each layer's row, the grid still within
// the width); a model whose layers are alike has neither.
func TestLayerKindsInHeadTables(t *testing.T) {
	kinds := []string{"local", "global"}
	var buf bytes.Buffer
	writeHeads(&printer{w: &buf}, headLines(2, 4), Model{Layers: 2, Heads: 4, LayerKinds: kinds}, 80)
	rows := strings.Split(buf.String(), "\n")
	if f := strings.Fields(rows[0]); len(f) < 3 || f[2] != "kind" {
		t.Errorf("the line table's header %q, want a kind column after the head", rows[0])
	}
	for i, want := range []string{"local", "local", "local", "local", "global", "global", "global", "global"} {
		if f := strings.Fields(rows[i+1]); len(f) < 3 || f[2] != want {
			t.Errorf("line %d %q: want %s", i+1, rows[i+1], want)
		}
	}
	buf.Reset()
	writeHeads(&printer{w: &buf}, headLines(2, 20), Model{Layers: 2, Heads: 20, LayerKinds: kinds}, 80)
	var marked []string
	for _, row := range strings.Split(buf.String(), "\n") {
		if len([]rune(row)) > 80 {
			t.Errorf("a grid line of %d columns: %q", len([]rune(row)), row)
		}
		if f := strings.Fields(row); len(f) > 1 && (f[len(f)-1] == "local" || f[len(f)-1] == "global") {
			marked = append(marked, f[0]+" "+f[len(f)-1])
		}
	}
	// 20 heads of 5 columns do not fit 80 columns with the kinds: two blocks.
	if got := strings.Join(marked, ", "); got != "0 local, 1 global, 0 local, 1 global" {
		t.Errorf("the grid marks %q, want each layer's row in both blocks:\n%s", got, buf.String())
	}
	for _, n := range []int{4, 20} {
		buf.Reset()
		writeHeads(&printer{w: &buf}, headLines(2, n), Model{Layers: 2, Heads: n}, 80)
		if strings.Contains(buf.String(), "local") || strings.Contains(buf.String(), "kind") {
			t.Errorf("%d heads a layer, layers alike: a kind is shown:\n%s", n, buf.String())
		}
	}
}
