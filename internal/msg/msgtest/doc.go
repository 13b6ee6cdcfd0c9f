// Package msgtest checks, in tests, that an error message keeps the
// conventions of package msg: one line, short whatever the input (values are
// shortened, so a message stays within MaxMessage bytes), and naming what the
// test expects it to name. It is imported by tests only (cmd/train,
// cmd/inspect, train, internal/safetensors).
package msgtest
