package cli

import (
	"flag"
	"fmt"
	"io"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
)

// Parse parses args into fs. On -h (or -help) it writes usage and the flag
// defaults to help and returns helped = true: the command has nothing more
// to do. A bad flag or value and any positional argument are errors.
func Parse(fs *flag.FlagSet, args []string, usage string, help io.Writer) (helped bool, err error) {
	fs.SetOutput(io.Discard) // the flag package's own messages are multi-line
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(help, usage)
			fs.SetOutput(help)
			fs.PrintDefaults()
			return true, nil
		}
		return false, errors.Errorf("bad flags (see -h): %s", msg.Shorten(err.Error()))
	}
	if fs.NArg() > 0 {
		return false, errors.Errorf("unexpected argument %s (flags only; see -h)", msg.Quote(fs.Arg(0)))
	}
	return false, nil
}
