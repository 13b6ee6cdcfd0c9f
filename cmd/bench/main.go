package main

import "github.com/attnscope/attnscope/internal/cli"

func main() { cli.Main("bench", run) }
