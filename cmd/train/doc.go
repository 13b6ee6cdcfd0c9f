// Command train trains a model on a toy sequence task from a YAML config and
// writes a run directory (config.yaml, metrics.jsonl, roles.jsonl,
// checkpoint.safetensors, best.safetensors and the optimizer state for
// -resume).
//
//	go run ./cmd/train -config configs/copy.yaml [-out runs/copy] [-set model.heads=8 ...]
//	go run ./cmd/train -resume runs/copy
//	go run ./cmd/train -config configs/finetune.yaml   # init_from: fine-tune a pretrained model
package main
