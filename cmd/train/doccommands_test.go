package main

import (
	"path/filepath"
	"testing"

	"github.com/attnscope/attnscope/internal/cli/clitest"
)

// TestDocCommandsParse: every train command line of the README and docs/*.md
// uses flags train defines, by their current names, with values they accept.
func TestDocCommandsParse(t *testing.T) {
	clitest.CheckDocCommands(t, filepath.Join("..", ".."), "train", run)
}
