// Command train trains a model on a toy sequence task from a YAML config and
// writes a run directory (config.yaml, metrics.jsonl, roles.jsonl,
// checkpoint.safetensors, best.safetensors and the optimizer state for
// -resume).
//
//	go run ./cmd/train -config configs/copy.yaml [-run runs/copy] [-set model.heads=8 ...]
//	go run ./cmd/train -config configs/copy.yaml -fresh  # start over, the old run moved to runs/copy.old-N
//	go run ./cmd/train -resume runs/copy                 # also -resume -run runs/copy
//	go run ./cmd/train -config configs/finetune.yaml     # init_from: fine-tune a pretrained model
//
// The run directory is -run DIR, as in inspect (-out, its old name, still
// works). Ctrl-C, SIGTERM and SIGHUP save a checkpoint and exit 128 plus
// the signal's number (130 for Ctrl-C).
package main
