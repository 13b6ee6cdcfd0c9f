package render

import (
	"bytes"
	"strings"
	"testing"
)

// TestHeadGrid: more than MaxHeadLines heads print as a grid of layers by
// heads whose cells are the role's code and score x 100 ("in97", "·" for
// a diffuse head) under a header of head numbers; up to MaxHeadLines print
// a line each.
func TestHeadGrid(t *testing.T) {
	var lines []HeadLine
	for l := range 2 {
		for h := range 20 {
			line := HeadLine{Layer: l, Head: h, Role: "diffuse (best: self)", Score: 0.1}
			if h == 3 {
				line = HeadLine{Layer: l, Head: h, Role: "induction", Code: "in", Score: 0.974}
			}
			lines = append(lines, line)
		}
	}
	var buf bytes.Buffer
	writeHeads(&printer{w: &buf}, lines, 200)
	rows := strings.Split(buf.String(), "\n")
	header, row1 := strings.Fields(rows[0]), strings.Fields(rows[2])
	if len(header) != 21 || header[0] != "layer" || header[20] != "h19" {
		t.Errorf("header %q", rows[0])
	}
	if len(row1) != 21 || row1[0] != "1" || row1[4] != "in97" || row1[1] != "·" {
		t.Errorf("layer 1's row %q: want 1, then · and in97 for head 3", rows[2])
	}
	if !strings.Contains(buf.String(), "in induction") {
		t.Errorf("no legend of the codes:\n%s", buf.String())
	}
	buf.Reset()
	writeHeads(&printer{w: &buf}, lines[:MaxHeadLines], 200)
	if n := strings.Count(buf.String(), "\n"); n != MaxHeadLines+1 {
		t.Errorf("%d heads printed %d lines, want a header and a line each", MaxHeadLines, n)
	}
}
