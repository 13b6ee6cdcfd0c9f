package render

import (
	"image/color"
	"math"
)

// Ramp is the plain-mode scale, lowest weight first.
const Ramp = " .:-=+*#%@"

// inferno holds the stops of the colour map at 0, 1/4, 1/2, 3/4 and 1.
var inferno = [...]color.RGBA{
	{0, 0, 4, 255},
	{87, 16, 110, 255},
	{188, 55, 84, 255},
	{249, 142, 9, 255},
	{252, 255, 164, 255},
}

// Color maps a weight in [0, 1] (clamped) onto the colour scale.
func Color(v float64) color.RGBA {
	v = clamp01(v)
	x := v * float64(len(inferno)-1)
	i := int(x)
	if i >= len(inferno)-1 {
		return inferno[len(inferno)-1]
	}
	f := x - float64(i)
	a, b := inferno[i], inferno[i+1]
	mix := func(p, q uint8) uint8 { return uint8(math.Round(float64(p) + f*(float64(q)-float64(p)))) }
	return color.RGBA{mix(a.R, b.R), mix(a.G, b.G), mix(a.B, b.B), 255}
}

// RampChar maps a weight in [0, 1] (clamped) onto Ramp: ten equal bins, so
// ' ' is [0, 0.1) and '@' is [0.9, 1].
func RampChar(v float64) byte {
	i := int(clamp01(v) * float64(len(Ramp)))
	if i >= len(Ramp) {
		i = len(Ramp) - 1
	}
	return Ramp[i]
}

// cubeLevels are the channel values of the xterm 6x6x6 colour cube.
var cubeLevels = [...]int{0, 95, 135, 175, 215, 255}

// xterm256 is the nearest colour of the xterm 6x6x6 cube (indices 16..231),
// channel by channel.
func xterm256(c color.RGBA) int {
	level := func(x uint8) int {
		best := 0
		for i, l := range cubeLevels {
			if abs(int(x)-l) < abs(int(x)-cubeLevels[best]) {
				best = i
			}
		}
		return best
	}
	return 16 + 36*level(c.R) + 6*level(c.G) + level(c.B)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func clamp01(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return math.Min(1, math.Max(0, v))
}
