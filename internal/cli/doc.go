// Package cli holds the command-line conventions cmd/train, cmd/inspect,
// cmd/sample, cmd/export and cmd/bench share: main is cli.Main, so a failure is one line
// on stderr after the command's name and exit status 1, and a command a
// signal stopped cleanly (*Interrupted) exits 128 plus the signal's number
// (130 for Ctrl-C). Flags may stand anywhere; a command takes flags only
// (Parse) or flags and one operand (ParseArgs: inspect and sample's model);
// any other argument is refused by name. -h prints the usage text and the
// flag defaults to stdout and succeeds; a bad flag or a stray argument is
// one short line ending in "see -h", never the usage. A renamed flag keeps
// its old name working with a one-line note (Rename). -tokens is read here
// (ParseTokens) against the names a model's vocabulary gives
// (open.TokenNames); text given on the command line (-prompt, -text) must
// be UTF-8 (CheckText). Every error names the flag the user gave. Like
// every internal package, it imports nothing of the domain.
package cli
