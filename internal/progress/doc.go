// Package progress shows how far a long computation has come, the way
// train and inspect show it: on a terminal one line redrawn in place
// ("\r", then the line, then an erase to its end), at most width-1
// columns so it never wraps; on a pipe or a file plain lines, at most one
// every PlainEvery, so a log stays short. The ETA comes from Rate: the
// slower of the average since the start and a smoothed recent rate, so it
// is not optimistic early and does not jump.
//
// Line is inspect's reporter: phases (reading the weights, scoring
// examples, each -circuits stage, ablating heads, writing a file), each
// with its count of units done of a total. It writes to the writer it is
// given (stderr) and nothing else; its clock and ticker are fields, so
// tests drive them by hand. The analyses never see it: they take a plain
// callback (done, total) whose zero value, nil, reports nothing.
//
// FormatETA, Rate and Bar are shared with train's progress line; IsTerminal,
// Width and WatchResize read the terminal. Like every internal package, it
// imports nothing of the domain.
package progress
