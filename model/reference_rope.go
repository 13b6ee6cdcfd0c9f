package model

import "math"

// The reference's positions and shapes, written from the definitions apart
// from the graph's (rope.go), so that TestReferenceIsTheOracle holds one
// against the other.

// window is layer l's window: the config's, except on a layer listed in
// global_layers, which sees every earlier position.
func (r *Reference) window(l int) int {
	for _, g := range r.cfg.GlobalLayers.Indexes() {
		if g == l {
			return 0
		}
	}
	return r.cfg.Window
}

// rotaryFrequencies are layer l's inverse frequencies: for each pair i of
// the R turned channels (rotary_dims, else the head), base^(-2i/R), the
// base being local_rope_base on a windowed layer when set (unscaled), else
// rope_base rescaled: linear divides each by the factor; llama3 (Llama 3.1,
// transformers' _compute_llama3_parameters) divides those whose wavelength
// 2π/f exceeds original/low_freq_factor, keeps those under
// original/high_freq_factor, and between them blends the two by the
// smoothing (original/wavelength - low)/(high - low).
func (r *Reference) rotaryFrequencies(l int) []float64 {
	c := r.cfg
	dims := c.RotaryDimsKey
	if dims == 0 {
		dims = c.DHead()
	}
	base, scaling := c.RopeBase, c.RopeScaling
	if base == 0 {
		base = DefaultRopeBase
	}
	if c.LocalRopeBase != 0 && r.window(l) > 0 {
		base, scaling = c.LocalRopeBase, ""
	}
	freqs := make([]float64, dims/2)
	for i := range freqs {
		f := 1 / math.Pow(base, float64(2*i)/float64(dims))
		switch scaling {
		case RopeScalingLinear:
			f /= c.RopeFactor
		case RopeScalingLlama3:
			f = llama3Scaled(f, c.RopeFactor, c.RopeLowFreqFactor, c.RopeHighFreqFactor, float64(c.RopeOriginalContext))
		}
		freqs[i] = f
	}
	return freqs
}

// llama3Scaled is one llama3-scaled inverse frequency.
func llama3Scaled(f, factor, low, high, original float64) float64 {
	wavelength := 2 * math.Pi / f
	if wavelength < original/high {
		return f
	}
	if wavelength > original/low {
		return f / factor
	}
	smooth := (original/wavelength - low) / (high - low)
	return (1-smooth)*f/factor + smooth*f
}
