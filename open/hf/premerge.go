package hf

import "github.com/attnscope/attnscope/model"

// setGlobalLayers sets cfg.GlobalLayers once p45-rope's model.Config has
// it; until that merge the layers are dropped.
func setGlobalLayers(cfg *model.Config, layers []int) {}
