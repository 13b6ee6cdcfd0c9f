package progress

import (
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// fakeClock is a Line's clock, moved by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newFakeLine(terminal bool, width int) (*Line, *strings.Builder, *fakeClock) {
	var out strings.Builder
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := NewLine(&out, terminal, width)
	l.Now = clock.now
	return l, &out, clock
}

// TestLineTerminal: on a terminal each update redraws one line in place
// ("\r", the line, an erase to its end, never a newline), with the
// phase, the count, the percentage and, once there is a rate, the ETA;
// Finish clears it.
func TestLineTerminal(t *testing.T) {
	l, out, clock := newFakeLine(true, 100)
	for h := int64(0); h <= 144; h++ {
		l.Update("ablating heads", h, 144, "heads")
		clock.advance(500 * time.Millisecond)
	}
	got := out.String()
	if strings.Contains(got, "\n") {
		t.Errorf("a terminal line holds a newline: %q", got)
	}
	draws := strings.Split(got, "\r")[1:]
	if len(draws) < 100 {
		t.Fatalf("%d redraws of 145 updates half a second apart, want one each", len(draws))
	}
	mid := draws[72]
	for _, want := range []string{"ablating heads [", "72/144 heads", "50%", "ETA 36s", "\x1b[K"} {
		if !strings.Contains(mid, want) {
			t.Errorf("the line halfway lacks %q: %q", want, mid)
		}
	}
	l.Finish()
	if !strings.HasSuffix(out.String(), "\r\x1b[K") {
		t.Errorf("Finish did not clear the line: %q", out.String()[len(got):])
	}
}

// TestLineFitsTheWidth: the terminal line never reaches the last column;
// at a narrow width the bar goes first and the phase stays.
func TestLineFitsTheWidth(t *testing.T) {
	for _, width := range []int{20, 40, 60, 80, 200} {
		l, out, clock := newFakeLine(true, width)
		for done := int64(0); done <= 400<<20; done += 8 << 20 {
			l.Update("reading weights", done, 400<<20, Bytes)
			clock.advance(time.Second)
		}
		for _, draw := range strings.Split(out.String(), "\r")[1:] {
			line := strings.TrimSuffix(draw, "\x1b[K")
			if n := utf8.RuneCountInString(line); n > width-1 {
				t.Errorf("width %d: a line of %d: %q", width, n, line)
			}
			if !strings.HasPrefix(line, "reading weights"[:min(15, width-1)]) {
				t.Errorf("width %d: the phase is gone: %q", width, line)
			}
		}
		if width >= 80 && !strings.Contains(out.String(), "MiB/400.0 MiB") {
			t.Errorf("width %d: no byte count: %q", width, out.String())
		}
	}
}

// TestLinePlain: on a pipe or a file the line is a plain log line, at
// most one per PlainEvery of the clock, with the elapsed time and the
// ETA, however often the work reports; a command shorter than
// PlainEvery writes nothing.
func TestLinePlain(t *testing.T) {
	l, out, clock := newFakeLine(false, 0)
	for h := int64(0); h <= 9; h++ {
		l.Update("ablating heads", h, 144, "heads")
		clock.advance(time.Second / 2)
	}
	if out.Len() != 0 {
		t.Fatalf("a 5-second phase wrote %q", out.String())
	}
	start := clock.t.Add(-5 * time.Second)
	var at []time.Time
	for h := int64(10); h <= 144; h++ {
		l.Update("ablating heads", h, 144, "heads")
		if strings.Count(out.String(), "\n") > len(at) {
			at = append(at, clock.t)
		}
		clock.advance(time.Second / 2)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	// 72 s of work: a line at 10 s, 20 s, ... 70 s.
	if len(lines) != 7 {
		t.Fatalf("%d lines over 72 s, want 7:\n%s", len(lines), out.String())
	}
	prev := start
	for i, when := range at {
		if d := when.Sub(prev); d < PlainEvery {
			t.Errorf("line %d came %v after the one before", i, d)
		}
		prev = when
	}
	if want := "ablating heads: 20/144 heads (13%)  elapsed 10s  ETA 1m02s"; lines[0] != want {
		t.Errorf("first line %q, want %q", lines[0], want)
	}
	if strings.ContainsAny(out.String(), "\r\x1b") {
		t.Errorf("plain lines hold terminal codes: %q", out.String())
	}
}

// TestLineTick: a phase of one long step still shows its clock: a tick
// redraws the terminal line with the time elapsed, and on a pipe writes
// the line once PlainEvery has passed.
func TestLineTick(t *testing.T) {
	l, out, clock := newFakeLine(true, 80)
	l.Update("writing page.html", 0, 0, "")
	clock.advance(3 * time.Second)
	l.Tick()
	if !strings.HasSuffix(out.String(), "\rwriting page.html 3s\x1b[K") {
		t.Errorf("after a tick at 3 s: %q", out.String())
	}
	p, plain, pclock := newFakeLine(false, 0)
	p.Update("scoring 8 examples", 0, 0, "")
	pclock.advance(9 * time.Second)
	p.Tick()
	pclock.advance(2 * time.Second)
	p.Tick()
	p.Tick()
	if got := plain.String(); got != "scoring 8 examples  elapsed 11s\n" {
		t.Errorf("plain ticks wrote %q", got)
	}
}

// TestLineNotices: a notice written through the line clears the live
// line, then redraws it, so the two never share a terminal line.
func TestLineNotices(t *testing.T) {
	l, out, _ := newFakeLine(true, 80)
	l.Update("reading weights", 1<<20, 4<<20, Bytes)
	before := out.Len()
	if _, err := l.Write([]byte("note: something\n")); err != nil {
		t.Fatal(err)
	}
	if got := out.String()[before:]; !strings.HasPrefix(got, "\r\x1b[Knote: something\n\rreading weights") {
		t.Errorf("a notice during the line wrote %q", got)
	}
}

// TestFormatETA covers each unit and the overflow of issue 11 (defect 9):
// an ETA longer than time.Duration can hold printed as
// "ETA -2562047h47m16.85s".
func TestFormatETA(t *testing.T) {
	cases := []struct {
		secs float64
		want string
	}{
		{0, "0s"}, {41.6, "42s"}, {185, "3m05s"}, {3599.4, "59m59s"}, {7620, "2h07m"},
		{3*86400 + 4*3600 + 59, "3d04h"}, {999*86400 + 1, "999d00h"},
		{1000 * 86400, "> 999d"}, {1e30, "> 999d"}, {math.Inf(1), "> 999d"},
		{math.NaN(), "?"}, {-1, "?"},
	}
	for _, c := range cases {
		if got := FormatETA(c.secs); got != c.want {
			t.Errorf("FormatETA(%v) = %q, want %q", c.secs, got, c.want)
		}
	}
}
