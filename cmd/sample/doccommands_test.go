package main

import (
	"path/filepath"
	"testing"

	"github.com/attnscope/attnscope/internal/cli/clitest"
)

// TestDocCommandsParse: every sample command line of the README and docs/*.md
// uses flags sample defines, by their current names, with values they accept.
func TestDocCommandsParse(t *testing.T) {
	clitest.CheckDocCommands(t, filepath.Join("..", ".."), "sample", run)
}
