// Package escapetest checks, in tests, that an output holds no character a
// terminal would act on or a renderer would reorder: the code points of
// the security issue listed by hand, independently of package escape, and
// escape.Unsafe beside them. It is imported by tests only (render,
// render/htmlview, internal/cli, cmd/inspect).
package escapetest
