// Package cli holds the command-line conventions cmd/train, cmd/inspect,
// cmd/sample and cmd/bench share: main is cli.Main, so a failure is one line
// on stderr after the command's name and exit status 1; flags only (no
// positional arguments); -h prints the usage text and the flag defaults and
// succeeds; a bad flag or a stray argument is one short line ending in
// "see -h", never the usage. -tokens is read here
// (ParseTokens) against the names a model's vocabulary gives
// (open.TokenNames). Like every internal package, it imports nothing of
// the domain.
package cli
