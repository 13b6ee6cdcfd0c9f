package progress

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Bar is a bar of width characters, "=" for the part done and ">" at its
// head.
func Bar(done, total int64, width int) string {
	filled := int(int64(width) * done / max(total, 1))
	filled = min(max(filled, 0), width)
	bar := strings.Repeat("=", filled)
	if filled < width {
		bar += ">" + strings.Repeat(" ", width-filled-1)
	}
	return bar
}

// FormatETA writes a number of seconds the way a person reads a wait:
// "42s", "3m05s", "2h07m", "3d04h", and "> 999d" for anything longer
// (including +Inf) instead of an overflowed duration.
func FormatETA(secs float64) string {
	switch {
	case math.IsNaN(secs) || secs < 0:
		return "?"
	case secs >= 1000*86400:
		return "> 999d"
	}
	s := int64(math.Round(secs))
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
}

// Rate estimates units per second for an ETA. It keeps two views: the
// average since the first observation (which includes the slow steps met
// so far: train's evaluations and checkpoints) and an exponentially
// smoothed rate over windows of at least RateWindow (which follows a
// machine that slows down). PerSecond is the slower of the two, so that
// early on, before the first slow step has been paid for, it is not
// optimistic, and it moves smoothly rather than jumping with every window.
// The zero value is ready to use.
type Rate struct {
	began       time.Time
	first       int64
	windowStart time.Time
	windowDone  int64
	last        int64
	lastTime    time.Time
	smoothed    float64 // units/s, 0 before the first full window
}

const (
	// RateWindow is the least time a window of the smoothed rate spans.
	RateWindow = 500 * time.Millisecond
	// rateSmoothing is the weight of the newest window in the smoothed rate.
	rateSmoothing = 0.2
)

// Observe records that done units were done at now.
func (m *Rate) Observe(now time.Time, done int64) {
	if m.began.IsZero() {
		// The first unit builds caches and warms up; time from its end.
		m.began, m.first, m.windowStart, m.windowDone = now, done, now, done
	}
	m.last = done
	if dt := now.Sub(m.windowStart); dt >= RateWindow {
		window := float64(done-m.windowDone) / dt.Seconds()
		if m.smoothed == 0 {
			m.smoothed = window
		} else {
			m.smoothed += rateSmoothing * (window - m.smoothed)
		}
		m.windowStart, m.windowDone = now, done
	}
	m.lastTime = now
}

// PerSecond is the rate an ETA uses, and false until there is one.
func (m *Rate) PerSecond() (float64, bool) {
	elapsed := m.lastTime.Sub(m.began).Seconds()
	if m.last <= m.first || elapsed <= 0 {
		return 0, false
	}
	rate := float64(m.last-m.first) / elapsed
	if m.smoothed > 0 {
		rate = min(rate, m.smoothed)
	}
	return rate, rate > 0
}
