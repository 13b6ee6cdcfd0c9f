package analysis_test

import (
	"fmt"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/open"
)

// TransformerLens's patching module on the committed induction run: the
// clean sequence repeats a block, the corrupted one replaces its first
// copy, and the metric is the logit difference of the clean next token
// (9) over the corrupted first copy's (14) after the last position.
// get_act_patch_resid_pre is PatchStream, (layer, pos);
// get_act_patch_attn_head_out_all_pos is PatchHeads of z, (layer, head):
// the layer-1 induction head (L1 H3) restores most of it, and of the
// stream the position after the earlier "1" (pos 3) going into layer 1,
// where that head reads the token to copy.
func ExamplePatchHeads() {
	op, err := open.Open("../testdata/induction", open.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	clean := [][]int{{3, 7, 1, 9, 3, 7, 1}}
	corrupt := [][]int{{11, 12, 13, 14, 3, 7, 1}}
	c, err := analysis.RunTokensWithCache(op.Model, clean, "blocks.*.hook_resid_pre", "blocks.*.attn.hook_z")
	if err != nil {
		fmt.Println(err)
		return
	}
	metric := analysis.LogitDiffMetric(len(clean[0]), 9, 14)
	resid, err := analysis.PatchStream(c, corrupt, "resid_pre", metric, nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	z, err := analysis.PatchHeads(c, corrupt, "z", false, metric, nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("clean %.2f, corrupted %.2f\n", z.Clean, z.Corrupted)
	fmt.Println("resid_pre", resid.Values.Shape)
	for l, row := range resid.Values.Matrix() {
		fmt.Printf("  layer %d: %.2f\n", l, row)
	}
	fmt.Println("z", z.Values.Shape)
	for l, row := range z.Values.Matrix() {
		fmt.Printf("  layer %d: %.2f\n", l, row)
	}
	// Output:
	// clean 11.82, corrupted -6.09
	// resid_pre [2 7]
	//   layer 0: [-3.14 -5.57 -12.14 -4.99 -6.09 -6.09 -6.09]
	//   layer 1: [-5.10 -5.75 -6.14 10.27 -6.14 -7.62 -5.88]
	// z [2 4]
	//   layer 0: [-7.15 -10.68 -6.38 -6.09]
	//   layer 1: [-4.65 -1.16 -6.15 5.39]
}
