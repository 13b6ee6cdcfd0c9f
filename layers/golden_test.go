package layers

import (
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
)

// TestAttentionGolden pins one tiny causal attention (B 1, T 3, D 4, H 2) to
// numbers written out here: its inputs and weights, and PyTorch's float64
// output, attention weights and gradients of sum(out * c), printed by
// testdata/golden_attention.py. Both paths, float64 (max abs difference
// 1e-12) and float32 (1e-5 relative to the largest entry).
func TestAttentionGolden(t *testing.T) {
	const b, tt, d, h = 1, 3, 4, 2
	x := []float64{
		0.5, -1.0, 0.25, 2.0,
		1.5, 0.75, -0.5, -1.25,
		-2.0, 0.5, 1.0, 0.25,
	}
	qkvWeight := []float64{ // (3D, D): rows [q | k | v], head h at rows [2h, 2h+2) of each
		0.3, -0.2, 0.1, 0.4,
		-0.5, 0.6, 0.2, -0.1,
		0.7, 0.1, -0.3, 0.2,
		0.0, -0.4, 0.5, 0.3,
		0.2, 0.3, -0.6, 0.1,
		-0.1, 0.5, 0.4, -0.2,
		0.6, -0.3, 0.2, 0.5,
		-0.4, 0.2, 0.1, -0.6,
		0.1, 0.4, -0.2, 0.3,
		0.5, -0.1, 0.6, 0.2,
		-0.3, 0.2, 0.4, -0.5,
		0.2, -0.6, 0.3, 0.1,
	}
	qkvBias := []float64{0.1, -0.1, 0.05, 0.0, 0.2, -0.2, 0.15, -0.05, 0.3, -0.3, 0.25, 0.1}
	outWeight := []float64{
		0.4, -0.3, 0.2, 0.1,
		-0.2, 0.5, -0.1, 0.3,
		0.3, 0.1, 0.6, -0.4,
		-0.5, 0.2, 0.3, 0.2,
	}
	outBias := []float64{0.05, -0.15, 0.1, 0.2}
	c := []float64{
		1.0, -0.5, 0.25, 2.0,
		-1.5, 1.0, 0.5, -0.25,
		0.75, 0.25, -1.0, 1.5,
	}

	wantOut := []float64{-0.022500000000000048, 0.47250000000000003, -0.7200000000000001, -0.01499999999999993, 0.07778411791334902, 0.27509250667684315, -0.6479087234404329, -0.06239956189054108, 0.4649627233182286, -0.5979742760029955, 0.8390538562225859, 0.2169290238441925}
	wantWeights := []float64{
		1.0, 0.0, 0.0, // head 0
		0.5959135552791932, 0.40408644472080674, 0.0,
		0.10674554289865215, 0.25059482581842946, 0.6426596312829185,
		1.0, 0.0, 0.0, // head 1
		0.9231490076817072, 0.07685099231829294, 0.0,
		0.021210878548339057, 0.22177575548540376, 0.7570133659662571,
	}
	wantGrads := map[string][]float64{
		"x":          {-0.0846309654896027, -0.33689930644500843, 0.8078833577416412, -0.5611912234455998, 0.25489676858392457, -0.3609792205748227, 0.3200280918400899, -0.042716710882347686, 0.1282879286661852, -0.5527560314976819, 0.32021829702425747, -0.08579987162244429},
		"qkv.weight": {-0.08150200507065597, -0.09736540468433642, 0.014586356768216777, 0.12138749514405459, -0.24856062857923605, -0.09369339485048564, 0.08965063606844144, 0.17824621101240498, -0.06913766825324913, 0.02693855781189023, 0.036714198737419663, -0.0004755910642230358, 0.06427122803167543, -0.026431811046833422, -0.03443872602448539, 0.0017543225327932184, 0.05510313951059515, 0.03143392179743514, -0.0288812024815643, -0.06983564563619163, -0.07975639436727823, 0.08385202729700372, 0.01703364775508283, -0.1163370731518672, -0.03836183936196349, 0.034288112867341174, 0.009350273441536543, -0.045798175441946434, 0.012637547704460926, -0.0024217104891556328, -0.004779506081586965, 0.00017171674316194836, -0.0023019815673301913, 0.2567212652274555, -0.5136298456698758, -1.2592574727711212, 0.7107766972458797, -0.11295324644099583, -0.027256731453738095, 0.40847434805900884, 0.4283200178300547, -0.8616263069236982, 0.20005098754525993, 1.6948476167752418, -0.9278291097475326, 0.2816345542358148, 0.596977801105416, 0.2862636661002096},
		"qkv.bias":   {-0.14240151783445043, -0.11812743325861809, 0.04958638640219026, -0.04825739807637148, -1.734723475976807e-17, 6.938893903907228e-17, 6.938893903907228e-18, 0.0, -1.75, 0.9249999999999999, 0.7999999999999999, 0.9999999999999999},
		"out.weight": {-0.021193696432276643, -0.15250089101986977, 1.0834671306440353, -0.5692034924320943, 0.3111155261788775, -0.1205841223278944, -0.14700578479550916, 0.3655450853208869, 0.08507817025339909, 0.7230850133477642, -1.6864613458485262, 1.0099084071112074, 1.3048316640608912, 0.48378898264904124, -0.2924729240083846, 1.5219666947103838},
		"out.bias":   {0.25, 0.75, -0.25, 3.25},
	}

	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		tol := 1e-12
		if dt == tensor.Float32 {
			tol = 1e-5
		}
		t.Run(dt.String(), func(t *testing.T) {
			eachPath(t, func(t *testing.T, path Path) {
				g := gorgonia.NewGraph()
				param := func(name string, v []float64, shape ...int) *gorgonia.Node {
					dense := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), v...)))
					if dt == tensor.Float32 {
						dense = graphtest.ToF32(dense)
					}
					return NewParam(g, name, dense)
				}
				xn := param("x", x, b*tt, d)
				qkv, err := NewLinear(param("attn.qkv.weight", qkvWeight, 3*d, d), param("attn.qkv.bias", qkvBias, 3*d))
				if err != nil {
					t.Fatal(err)
				}
				out, err := NewLinear(param("attn.out.weight", outWeight, d, d), param("attn.out.bias", outBias, d))
				if err != nil {
					t.Fatal(err)
				}
				attn, err := NewMultiHeadSelfAttention(b, tt, h, qkv, out, AttentionOptions{})
				if err != nil {
					t.Fatal(err)
				}
				attn.SetPath(path)
				built, err := attn.Forward(xn, AttentionInputs{})
				if err != nil {
					t.Fatal(err)
				}
				cost := graphtest.Must(t)(gorgonia.Sum(graphtest.Must(t)(gorgonia.HadamardProd(built.Out, param("c", c, b*tt, d)))))
				wrt := gorgonia.Nodes{xn, qkv.Weight, qkv.Bias, out.Weight, out.Bias}
				_, grads := graphtest.Gradients(t, g, cost, wrt)

				graphtest.CheckRelative(t, "output", graphtest.Values(t, built.Out), wantOut, tol)
				graphtest.CheckRelative(t, "attention weights", graphtest.Values(t, built.Weights), wantWeights, tol)
				for i, name := range []string{"x", "qkv.weight", "qkv.bias", "out.weight", "out.bias"} {
					graphtest.CheckRelative(t, "gradient of "+name, grads[i], wantGrads[name], tol)
				}
			})
		})
	}
}
