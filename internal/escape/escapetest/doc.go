// Package escapetest checks, in tests, that an output holds no character a
// terminal would act on or a renderer would reorder: the code points of
// the security issue listed by hand, independently of package escape, and
// escape.Unsafe beside them; and gives the hostile string (Payload) that
// tests plant in every place a file names something. It is imported by
// tests only (render, render/htmlview, internal/cli, internal/msg,
// internal/safetensors, cmd/inspect, cmd/sample, cmd/train).
package escapetest
