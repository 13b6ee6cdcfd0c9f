package render

import "github.com/attnscope/attnscope/internal/escape"

// Every view escapes the text it is given at its entry point (Terminal,
// Table, GridLayout, Grid, Scores, Chart), before anything is measured: a
// label is one cell, so escape.Label. Widths, cuts and drawing then all see
// the escaped form, and no caller can put a control or bidi character on a
// terminal or into an image whatever it passes. escape.Label leaves safe
// text as it is, so escaping twice changes nothing.

// shown is p with its title, labels, notes and predictions escaped.
func (p Panel) shown() Panel {
	p.Title = escape.Label(p.Title)
	p.Rows, p.Cols, p.Notes, p.Predicted = escape.Labels(p.Rows), escape.Labels(p.Cols), escape.Labels(p.Notes), escape.Labels(p.Predicted)
	return p
}

// shownPanels escapes each panel, in a new slice.
func shownPanels(panels []Panel) []Panel {
	out := make([]Panel, len(panels))
	for i, p := range panels {
		out[i] = p.shown()
	}
	return out
}

// shown is f with its title and every panel escaped.
func (f Figure) shown() Figure {
	f.Title = escape.Labels(f.Title)
	grid := make([][]Panel, len(f.Grid))
	for i, row := range f.Grid {
		grid[i] = shownPanels(row)
	}
	f.Grid = grid
	return f
}

// shownRows escapes the names and cells of a Table's rows.
func shownRows(rows []Row) []Row {
	out := make([]Row, len(rows))
	for i, r := range rows {
		out[i] = Row{Name: escape.Label(r.Name), Cells: escape.Labels(r.Cells)}
	}
	return out
}

// shown is t with its title, row labels and column names escaped.
func (t ScoreTable) shown() ScoreTable {
	t.Title, t.Rows = escape.Labels(t.Title), escape.Labels(t.Rows)
	columns := make([]ScoreColumn, len(t.Columns))
	for i, c := range t.Columns {
		c.Name = escape.Label(c.Name)
		columns[i] = c
	}
	t.Columns = columns
	return t
}

// shownCharts escapes each chart panel's title and series names.
func shownCharts(panels []ChartPanel) []ChartPanel {
	out := make([]ChartPanel, len(panels))
	for i, p := range panels {
		p.Title = escape.Label(p.Title)
		series := make([]Series, len(p.Series))
		for k, s := range p.Series {
			s.Name = escape.Label(s.Name)
			series[k] = s
		}
		p.Series = series
		out[i] = p
	}
	return out
}
