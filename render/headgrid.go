package render

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/attnscope/attnscope/internal/msg"
)

// MaxHeadLines is the most heads the heads' table lists a line each; more
// (GPT-2 small's 144) are a grid of layers by heads.
const MaxHeadLines = 32

// gridLegend says what the grid's cells mean.
const gridLegend = "cells: the role's code and score x 100 (pv previous-token, sf self, ft first-token, sp separator, " +
	"oK offset k, dp duplicate-token, in induction, mn smallest-remaining, nx next-larger, br matching-bracket); " +
	"· diffuse (no pattern reaches the threshold)"

// writeHeadGrid prints the heads as rows of layers and columns of heads,
// each cell the role's code and score ("in97"), or "·" for a diffuse head;
// under the head numbers, the key-value head each reads when the model
// groups its query heads; after each row of a local/global model, whether
// the layer is local or global. Heads wider than width together go in
// blocks of as many columns as fit, one under the other.
func writeHeadGrid(p *printer, lines []HeadLine, m Model, width int) {
	heads := 0
	for _, h := range lines {
		heads = max(heads, h.Head+1)
	}
	cell := len("h00") + 1
	for _, h := range lines {
		cell = max(cell, len(gridCell(h))+1)
	}
	var rows [][]string // a row per layer, in the order lines list them
	var layers []int
	for i := 0; i < len(lines); {
		layer := lines[i].Layer
		row := make([]string, heads)
		for ; i < len(lines) && lines[i].Layer == layer; i++ {
			row[lines[i].Head] = gridCell(lines[i])
		}
		rows, layers = append(rows, row), append(layers, layer)
	}
	kinds := 0 // the room for a local/global model's "  global" after each row
	if m.LayerKinds != nil {
		kinds = len("  global")
	}
	per := max(1, (width-len("layer ")-kinds)/cell)
	for start := 0; start < heads; start += per {
		if start > 0 {
			p.printf("\n")
		}
		writeGridBlock(p, rows, layers, m, start, min(heads, start+per), cell)
	}
	p.para(width, "%s", roleTally(lines))
	p.para(width, "%s", gridLegend)
	if m.Grouped() {
		p.para(width, "kv: the key-value head each query head reads (%d query heads share each)", m.Heads/m.KVHeads)
	}
}

// writeGridBlock prints the grid's columns of heads [from, to).
func writeGridBlock(p *printer, rows [][]string, layers []int, m Model, from, to, cell int) {
	p.printf("%5s ", "layer")
	for h := from; h < to; h++ {
		p.printf("%*s", cell, fmt.Sprintf("h%d", h))
	}
	p.printf("\n")
	if m.Grouped() {
		p.printf("%5s ", "kv")
		for h := from; h < to; h++ {
			p.printf("%*d", cell, m.KVHead(h))
		}
		p.printf("\n")
	}
	for i, row := range rows {
		p.printf("%5d ", layers[i])
		for _, c := range row[from:to] {
			p.printf("%*s", cell, c)
		}
		if kind := m.kind(layers[i]); kind != "" {
			p.printf("  %s", kind)
		}
		p.printf("\n")
	}
}

// gridCell is one head's cell: "in97", or "·" when it is diffuse.
func gridCell(h HeadLine) string {
	if h.Code == "" {
		return "·"
	}
	return fmt.Sprintf("%s%02d", h.Code, min(99, int(h.Score*100+0.5)))
}

// codeRoles names the roles of the grid's codes, offsets as one ("o" of
// "o3").
var codeRoles = map[string]string{"pv": "previous-token", "sf": "self", "ft": "first-token", "sp": "separator", "o": "offset",
	"dp": "duplicate-token", "in": "induction", "mn": "smallest-remaining", "nx": "next-larger", "br": "matching-bracket", "": "diffuse"}

// roleTally counts the grid's heads by role, most common first: "1024
// heads: 980 diffuse, 30 induction, 14 offset" reads at once where 1,024
// cells do not.
func roleTally(lines []HeadLine) string {
	counts := map[string]int{}
	for _, h := range lines {
		role, ok := codeRoles[strings.TrimRightFunc(h.Code, unicode.IsDigit)]
		if !ok {
			role = h.Code
		}
		counts[role]++
	}
	roles := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b))
	})
	parts := make([]string, len(roles))
	for i, r := range roles {
		parts[i] = fmt.Sprintf("%d %s", counts[r], r)
	}
	return msg.Count(len(lines), "head") + ": " + strings.Join(parts, ", ")
}
