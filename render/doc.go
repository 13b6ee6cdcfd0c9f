// Package render draws attention weights: heatmaps on a terminal (24-bit or
// 256-colour ANSI cells, or a plain character ramp) and a PNG grid; and
// training curves, as terminal sparklines and PNG line charts.
//
// Conventions:
//   - A Panel is one head's (T, T) weight matrix, rows = queries, columns =
//     keys, with a label per row and per column. When Panel.Causal is set,
//     cells above the diagonal (keys after the query) are drawn as masked:
//     a single "·" on the terminal's background (a weight always fills its
//     whole cell), light grey in a PNG, so that "masked" and "weight 0" stay
//     distinguishable in every mode.
//   - Weights map linearly onto the scale: 0 is the first ramp character
//     (a space) or the darkest colour, 1 the last ramp character '@' or the
//     brightest colour. The colour map is a fixed 5-stop approximation of
//     matplotlib's "inferno" (black, purple, red, orange, pale yellow), the
//     same on a terminal and in a PNG.
//   - A PNG is a Figure: title lines over the panels, each layer's heads in
//     rows of as many as fit MaxWidth pixels; a title line wider than the
//     panels wraps at its spaces. Its panels number the
//     positions on both axes and draw the optional marks (scored rows,
//     separator, predictions) a Panel carries. A cell is as wide as the
//     longest column label until the heatmap would pass 960 px a side;
//     a longer sequence's cells shrink to fit that, and its axes then
//     label (and its predictions show) every 2nd, 5th, 10th, ... position,
//     as far apart as the labels need, while every scored row keeps its
//     mark.
//   - Curves: Sparkline bins points by x onto a fixed axis, so several
//     curves logged at different steps line up column by column; Chart
//     stacks line plots sharing one x axis, values clamped to each panel's
//     y range.
//   - Text is shown escaped (internal/escape's Label): every view escapes
//     the labels, titles and notes it is given before measuring them, so a
//     control or bidi character of a token shows as \x1b or \u202e, is
//     measured and cut (at six columns) as such, and never reaches a
//     terminal or an image raw.
//   - Plain mode writes no escape sequences at all; colour modes write SGR
//     background colours and reset after every cell run.
//   - No line of a terminal view is wider than the width it is given: heads
//     sit side by side as they fit, a panel too wide is drawn compact
//     (two-character cells), and one too wide even so is binned
//     (Panel.Binned: k x k positions a cell, the queries' mean share of
//     attention to the keys, k the fewest that fit), with a line saying so.
//   - Nothing here decides whether colour is wanted or how wide the terminal
//     is: the caller passes a Mode and a width.
package render
