// Package sttest takes a safetensors file apart and puts it back together in
// tests, so a test can forge what a buggy or hostile writer would: its JSON
// header as generic values (a map from tensor name to its dtype, shape and
// data_offsets, plus "__metadata__"), edited, then joined with the data
// section unchanged, or with the data edited and the digest recorded anew
// (Reseal), or with the run config its metadata carries edited (EditConfig).
// It is imported by tests only (checkpoint, cmd/train, cmd/inspect, model,
// open, train).
package sttest
