package hf

import (
	"fmt"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
)

// The layer_types values transformers writes: a layer attends to every
// earlier token, or to its sliding window.
const (
	fullAttention    = "full_attention"
	slidingAttention = "sliding_attention"
)

// slidingLayers says of each of the layers whether its attention slides:
// as layer_types names it when config.json has the key (newer
// transformers write it), else by the model's own rule.
func slidingLayers(keys configKeys, layers int, rule func(i int) bool) ([]bool, error) {
	sliding := make([]bool, layers)
	if !keys.present("layer_types") {
		for i := range sliding {
			sliding[i] = rule(i)
		}
		return sliding, nil
	}
	var types []string
	if err := jsonStrings(keys["layer_types"], &types); err != nil || len(types) != layers {
		return nil, keys.wrongValue("layer_types", fmt.Sprintf("a list of %d strings (num_hidden_layers), each %s or %s", layers, fullAttention, slidingAttention))
	}
	for i, t := range types {
		switch t {
		case slidingAttention:
			sliding[i] = true
		case fullAttention:
		default:
			return nil, errors.Errorf("layer_types: %s: not supported; supported: %s, %s", msg.Quote(t), fullAttention, slidingAttention)
		}
	}
	return sliding, nil
}

// count is the number of layers that slide.
func count(sliding []bool) int {
	n := 0
	for _, s := range sliding {
		if s {
			n++
		}
	}
	return n
}

// layerWindows are model.Config.Window and GlobalLayers for windows of
// width keys on the sliding layers: no window when none slides (or width
// is 0), the window on every layer when all slide, else the window with
// the others listed as global.
func layerWindows(sliding []bool, width int) (int, model.LayerList) {
	var global []int
	for i, s := range sliding {
		if !s {
			global = append(global, i)
		}
	}
	switch {
	case width == 0 || len(global) == len(sliding):
		return 0, ""
	case len(global) == 0:
		return width, ""
	}
	return width, model.NewLayerList(global...)
}
