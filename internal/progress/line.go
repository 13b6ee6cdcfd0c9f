package progress

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/attnscope/attnscope/internal/msg"
)

// PlainEvery is the least time between two plain lines: a command of a
// few seconds writes none, a long one a line now and then, as train does.
const PlainEvery = 10 * time.Second

// redrawEvery is the least time between two redraws of a terminal line:
// ten a second is enough for the eye.
const redrawEvery = 100 * time.Millisecond

// Bytes is the unit of a phase that counts bytes; they show as "MiB".
const Bytes = "bytes"

// Line reports the phases of a long command on w. Update is the callback
// the work calls; Tick redraws with the time alone (a phase of one long
// step still shows its elapsed time), for a ticker to call; Write passes
// other messages through without tearing the live line; Finish clears it.
// Its methods may be called from several goroutines.
type Line struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	width    int              // terminal columns; <= 0 means DefaultWidth
	Now      func() time.Time // the clock, time.Now unless a test sets it

	phase, unit string
	done, total int64
	began       time.Time // the phase's start
	rate        Rate
	lastDraw    time.Time
	drawn       bool      // a terminal line is on screen
	printedAt   time.Time // the last plain line, or the first phase's start
	started     bool
	err         error // the first failed write: progress then stops
}

// NewLine reports on w: a redrawn line when terminal is set (width
// columns), else plain lines at most every PlainEvery.
func NewLine(w io.Writer, terminal bool, width int) *Line {
	return &Line{w: w, terminal: terminal, width: width, Now: time.Now}
}

// Update says that phase has done of total units (total 0: not known);
// unit names them ("heads", "examples", Bytes). A new phase name starts a
// new phase, its ETA from its own rate.
func (l *Line) Update(phase string, done, total int64, unit string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.Now()
	if !l.started {
		l.started, l.printedAt = true, now
	}
	if phase != l.phase {
		l.phase, l.unit, l.began, l.rate = phase, unit, now, Rate{}
		l.lastDraw = time.Time{}
	}
	l.done, l.total = done, total
	l.rate.Observe(now, done)
	l.show(now)
}

// Tick shows the current phase again with the time now: a terminal line
// redrawn, or a plain line when one is due.
func (l *Line) Tick() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.phase != "" {
		l.show(l.Now())
	}
}

// Ticking calls Tick every period until stop is called, so a phase of
// one long step (a forward, encoding a PNG) still moves its clock.
func (l *Line) Ticking(period time.Duration) (stop func()) {
	t := time.NewTicker(period)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-t.C:
				l.Tick()
			case <-done:
				return
			}
		}
	}()
	return func() {
		t.Stop()
		close(done)
	}
}

// Resize takes a new terminal width and redraws at once.
func (l *Line) Resize(width int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.width = width
	if l.drawn {
		l.draw(l.Now())
	}
}

// Write writes p (notices of the work) on the line's writer, the live
// terminal line cleared first and redrawn after, so neither tears the
// other.
func (l *Line) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drawn {
		l.write("\r\x1b[K")
	}
	n, err := l.w.Write(p)
	if l.drawn {
		l.draw(l.Now())
	}
	return n, err
}

// Finish clears the terminal line, so that what follows starts on a clean
// line; plain lines stay, as a log's.
func (l *Line) Finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drawn {
		l.write("\r\x1b[K")
		l.drawn = false
	}
	l.phase = ""
}

// show draws the terminal line when a redraw is due (or the phase is
// done), or writes a plain line when PlainEvery has passed since the last.
func (l *Line) show(now time.Time) {
	if !l.terminal {
		if now.Sub(l.printedAt) >= PlainEvery {
			l.write(l.plain(now) + "\n")
			l.printedAt = now
		}
		return
	}
	if now.Sub(l.lastDraw) < redrawEvery && !(l.total > 0 && l.done == l.total) {
		return
	}
	l.draw(now)
}

func (l *Line) draw(now time.Time) {
	l.lastDraw, l.drawn = now, true
	l.write("\r" + l.fitted(now) + "\x1b[K")
}

// write writes s unless a write failed before: progress is never worth an
// error of the command's own.
func (l *Line) write(s string) {
	if l.err == nil {
		_, l.err = io.WriteString(l.w, s)
	}
}

// count is "37/144 heads" or "120.4 MiB/474.7 MiB"; without a total,
// what is done alone.
func (l *Line) count() string {
	if l.unit == Bytes {
		if l.total > 0 {
			return msg.Bytes(float64(l.done)) + "/" + msg.Bytes(float64(l.total))
		}
		return msg.Bytes(float64(l.done))
	}
	if l.total > 0 {
		return fmt.Sprintf("%d/%d %s", l.done, l.total, l.unit)
	}
	if l.done > 0 {
		return fmt.Sprintf("%d %s", l.done, l.unit)
	}
	return ""
}

// eta is "ETA 1m09s" once there is a rate and a total, else "".
func (l *Line) eta() string {
	rate, ok := l.rate.PerSecond()
	if !ok || l.total <= 0 {
		return ""
	}
	return "ETA " + FormatETA(float64(l.total-l.done)/rate)
}

// percent is "25%", "" without a total.
func (l *Line) percent() string {
	if l.total <= 0 {
		return ""
	}
	return fmt.Sprintf("%d%%", 100*l.done/l.total)
}

// plain is a line for a log, e.g.
//
//	ablating heads: 37/144 heads (25%)  elapsed 23s  ETA 1m09s
//	circuits: logit lens  elapsed 5s
func (l *Line) plain(now time.Time) string {
	line := l.phase
	if c := l.count(); c != "" {
		line += ": " + c
	}
	if p := l.percent(); p != "" {
		line += " (" + p + ")"
	}
	line += "  elapsed " + FormatETA(now.Sub(l.began).Seconds())
	if eta := l.eta(); eta != "" {
		line += "  " + eta
	}
	return line
}

// Field widths of the terminal line's bar.
const (
	maxBar = 24 // widest bar, brackets excluded
	minBar = 5  // narrower than this, the bar is dropped
)

// fitted is the terminal line for the width, e.g.
//
//	ablating heads [=====>            ] 37/144 heads 25% 23s ETA 1m09s
//
// at most width-1 characters. When everything does not fit, the bar
// shrinks and goes first, then the elapsed time, the count and the
// percentage; the phase and the ETA stay as long as they fit.
func (l *Line) fitted(now time.Time) string {
	width := l.width
	if width <= 0 {
		width = DefaultWidth
	}
	room := width - 1
	fields := []Field{{Text: l.phase}}
	if l.total > 0 {
		fields = append(fields, Field{BarField, 1})
	}
	for _, f := range []Field{{l.count(), 3}, {l.percent(), 4}, {FormatETA(now.Sub(l.began).Seconds()), 2}, {l.eta(), 5}} {
		if f.Text != "" {
			fields = append(fields, f)
		}
	}
	return Fit(fields, room, func(width int) string { return Bar(l.done, l.total, width) })
}

// BarField, as a Field's text, stands for the progress bar, which Fit
// sizes to the room the other fields leave.
const BarField = "BAR"

// Field is one part of a progress line. Drop orders what goes when the
// line does not fit: 1 first, then 2, ...; 0 never.
type Field struct {
	Text string
	Drop int
}

// Fit joins fields with spaces into a line of at most room characters:
// fields are dropped in their Drop order until the rest fits, the bar
// (BarField) takes the width left, from minBar to maxBar characters
// between brackets, drawn by bar, and a line still too long is cut.
func Fit(fields []Field, room int, bar func(width int) string) string {
	length := func() (n int) {
		for _, f := range fields {
			if f.Text == BarField {
				n += 2 + minBar
			} else {
				n += utf8.RuneCountInString(f.Text)
			}
		}
		return n + len(fields) - 1
	}
	for rank := 1; length() > room && slices.ContainsFunc(fields, func(f Field) bool { return f.Drop >= rank }); rank++ {
		fields = slices.DeleteFunc(fields, func(f Field) bool { return f.Drop == rank })
	}
	width := min(maxBar, minBar+room-length())
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = f.Text
		if f.Text == BarField {
			parts[i] = "[" + bar(width) + "]"
		}
	}
	line := []rune(strings.Join(parts, " "))
	return string(line[:min(len(line), max(0, room))])
}
