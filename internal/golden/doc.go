// Package golden compares a test's output with a golden file in the test's
// testdata/ folder, or rewrites that file when the test runs with -update. It
// is imported by tests only (render, cmd/inspect).
package golden
