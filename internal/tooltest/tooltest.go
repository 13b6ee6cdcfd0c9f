// Package tooltest finds the tools outside Go that some tests need
// (PyTorch, Chromium). A developer machine without one skips those tests;
// under CI=true its absence fails them, since .ci/run installs each. It is
// imported by tests only.
package tooltest

import (
	"os"
	"os/exec"
	"testing"
)

// Python is Debian's Python, which has torch (python3-torch); a pyenv
// python3 first on PATH may not.
const Python = "/usr/bin/python3"

// Torch returns Python once it imports torch, or skips the test (fails it
// under CI=true).
func Torch(t testing.TB) string {
	t.Helper()
	if err := exec.Command(Python, "-c", "import torch").Run(); err != nil {
		missing(t, Python+" cannot import torch: "+err.Error(), "apt-get install python3-torch libopenblas0-pthread")
	}
	return Python
}

// Numpy returns Python once it imports numpy, or skips the test (fails it
// under CI=true): numpy alone, for a file a Python user reads without
// PyTorch.
func Numpy(t testing.TB) string {
	t.Helper()
	if err := exec.Command(Python, "-c", "import numpy").Run(); err != nil {
		missing(t, Python+" cannot import numpy: "+err.Error(), "apt-get install python3-numpy")
	}
	return Python
}

// Chromium returns the path of Chromium (or Chrome) on PATH, or skips the
// test (fails it under CI=true).
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	missing(t, "no Chromium on PATH (chromium, chromium-browser or google-chrome)", "apt-get install chromium")
	return ""
}

func missing(t testing.TB, what, install string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s; .ci/run installs it (%s)", what, install)
	}
	t.Skipf("%s; %s to run this test", what, install)
}
