package render

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// headLines are layers x heads lines, every head diffuse but head 3 of
// each layer, an induction head.
func headLines(layers, heads int) []HeadLine {
	var lines []HeadLine
	for l := range layers {
		for h := range heads {
			line := HeadLine{Layer: l, Head: h, Role: "diffuse (best: self)", Score: 0.1}
			if h == 3 {
				line = HeadLine{Layer: l, Head: h, Role: "induction", Code: "in", Score: 0.974}
			}
			lines = append(lines, line)
		}
	}
	return lines
}

// TestHeadGrid: more than MaxHeadLines heads print as a grid of layers by
// heads whose cells are the role's code and score x 100 ("in97", "·" for
// a diffuse head) under a header of head numbers; up to MaxHeadLines print
// a line each.
func TestHeadGrid(t *testing.T) {
	lines := headLines(2, 20)
	var buf bytes.Buffer
	writeHeads(&printer{w: &buf}, lines, Model{Layers: 2, Heads: 20}, 200)
	rows := strings.Split(buf.String(), "\n")
	header, row1 := strings.Fields(rows[0]), strings.Fields(rows[2])
	if len(header) != 21 || header[0] != "layer" || header[20] != "h19" {
		t.Errorf("header %q", rows[0])
	}
	if len(row1) != 21 || row1[0] != "1" || row1[4] != "in97" || row1[1] != "·" {
		t.Errorf("layer 1's row %q: want 1, then · and in97 for head 3", rows[2])
	}
	if !strings.Contains(buf.String(), "in induction") || strings.Contains(buf.String(), "kv") {
		t.Errorf("no legend of the codes, or a kv row without grouped heads:\n%s", buf.String())
	}
	if !strings.Contains(buf.String(), "\n40 heads: 38 diffuse, 2 induction\n") {
		t.Errorf("no tally of the roles, most common first:\n%s", buf.String())
	}
	buf.Reset()
	writeHeads(&printer{w: &buf}, lines[:MaxHeadLines], Model{Layers: 2, Heads: 20}, 200)
	if n := strings.Count(buf.String(), "\n"); n != MaxHeadLines+1 {
		t.Errorf("%d heads printed %d lines, want a header and a line each", MaxHeadLines, n)
	}
}

// TestKVHeads: with grouped-query heads (4 key-value heads for 8 or 40
// query heads) the line table has a kv column and the grid a kv row, each
// query head h under kv head h / (heads / kv heads); with as many
// key-value heads as query heads neither appears.
func TestKVHeads(t *testing.T) {
	for _, c := range []struct {
		heads, kvHeads int
		kvRow          int    // the line of the grid's kv row; -1 for the line table
		want           string // the kv heads of heads 0, 1, ...
	}{
		{8, 4, -1, "0 0 1 1 2 2 3 3"},
		{40, 4, 1, strings.Repeat("0 ", 10) + strings.Repeat("1 ", 10) + strings.Repeat("2 ", 10) + strings.TrimSpace(strings.Repeat("3 ", 10))},
		{8, 8, -1, ""},
		{40, 0, 1, ""},
	} {
		var buf bytes.Buffer
		writeHeads(&printer{w: &buf}, headLines(1, c.heads), Model{Layers: 1, Heads: c.heads, KVHeads: c.kvHeads}, 400)
		rows := strings.Split(buf.String(), "\n")
		var got []string
		if c.kvRow < 0 {
			for _, row := range rows[1 : c.heads+1] {
				if f := strings.Fields(row); len(f) > 2 && f[2] != "diffuse" && f[2] != "induction" {
					got = append(got, f[2])
				}
			}
			if strings.Fields(rows[0])[2] == "kv" != (c.want != "") {
				t.Errorf("%d heads, %d kv heads: header %q", c.heads, c.kvHeads, rows[0])
			}
		} else if f := strings.Fields(rows[c.kvRow]); f[0] == "kv" {
			got = f[1:]
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%d heads, %d kv heads: kv heads %q, want %q:\n%s", c.heads, c.kvHeads, got, c.want, buf.String())
		}
	}
}

// TestHeadGridFits: a grid of more heads a layer than fit the width (32
// heads of 5 columns in 80) goes in blocks of as many head columns as fit,
// each with its header, every layer in each, and no line wider than the
// width; a grid that fits is one block.
func TestHeadGridFits(t *testing.T) {
	for _, c := range []struct{ width, heads, blocks int }{{80, 32, 3}, {120, 32, 2}, {80, 12, 1}} {
		var buf bytes.Buffer
		writeHeads(&printer{w: &buf}, headLines(4, c.heads), Model{Layers: 4, Heads: c.heads, KVHeads: 4}, c.width)
		out := buf.String()
		for _, l := range strings.Split(out, "\n") {
			if visibleWidth(l) > c.width {
				t.Errorf("%d heads at %d columns: line %q is %d wide", c.heads, c.width, l, visibleWidth(l))
			}
		}
		if n := strings.Count(out, "layer "); n != c.blocks {
			t.Errorf("%d heads at %d columns: %d blocks, want %d:\n%s", c.heads, c.width, n, c.blocks, out)
		}
		if n := strings.Count(out, "in97"); n != 4 {
			t.Errorf("%d heads at %d columns: head 3 shown in %d layers, want 4:\n%s", c.heads, c.width, n, out)
		}
		if !strings.Contains(out, "h"+strconv.Itoa(c.heads-1)+"\n") || strings.Count(out, "   kv ") != c.blocks {
			t.Errorf("%d heads at %d columns: the last head's column or a kv row is missing:\n%s", c.heads, c.width, out)
		}
	}
}
