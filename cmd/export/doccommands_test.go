package main

import (
	"path/filepath"
	"testing"

	"github.com/attnscope/attnscope/internal/cli/clitest"
)

// TestDocCommandsParse: every export command line of the README and
// docs/*.md uses flags export defines, with values they accept.
func TestDocCommandsParse(t *testing.T) {
	clitest.CheckDocCommands(t, filepath.Join("..", ".."), "export", run)
}
