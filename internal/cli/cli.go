package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
)

// Main is a command's main: it calls run with the process's arguments and
// streams, and when run fails prints its error on one line of stderr after
// the command's name ("train: ...") and exits 1. Unless GOGC is set, the
// heap is collected when it has grown by a quarter (Go's default waits for
// it to double; see heapGrowth).
func Main(name string, run func(args []string, stdout, stderr io.Writer) error) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(heapGrowth)
	}
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// heapGrowth is the GC percent of the commands. Their heap is mostly
// tensors, which hold no pointers and cost the collector nothing to mark,
// while a graph's buffers come and go in hundreds of megabytes at a model
// of GPT-2 small's size: inspect -ablate on it peaked at 3.7 GB at Go's
// 100 and 2.3 GB at 25, in the same time.
const heapGrowth = 25

// Parse parses args into fs. On -h (or -help) it writes usage and the flag
// defaults to help and returns helped = true: the command has nothing more
// to do. A bad flag or value and any positional argument are errors, with a
// suggestion where one is likely: the nearest flag ("did you mean
// -config?"), or for a command with a -set flag and config keys, the -set of
// a key named like the flag ("-steps 10": "did you mean -set
// train.steps=10?") or the key=value the user split in two ("-set
// model.heads 8": "did you mean -set model.heads=8?").
func Parse(fs *flag.FlagSet, args []string, usage string, help io.Writer, keys ...string) (helped bool, err error) {
	fs.SetOutput(io.Discard) // the flag package's own messages are multi-line
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(help, usage)
			fs.SetOutput(help)
			fs.PrintDefaults()
			return true, nil
		}
		return false, errors.Errorf("bad flags (see -h): %s%s", msg.Shorten(err.Error()), suggestFlag(fs, err, args, keys))
	}
	if fs.NArg() > 0 {
		return false, errors.Errorf("unexpected argument %s (flags only; see -h)%s", msg.Quote(fs.Arg(0)), suggestSplit(fs, args))
	}
	return false, nil
}

// suggestFlag names the flag (or the -set) an undefined flag was probably
// meant to be, or returns "".
func suggestFlag(fs *flag.FlagSet, err error, args, keys []string) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return ""
	}
	name = strings.TrimPrefix(name, "-")
	var flags []string
	fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f.Name) })
	if near := msg.Nearest(name, flags); near != "" {
		return fmt.Sprintf(" (did you mean -%s?)", near)
	}
	for _, key := range keys {
		if key == name || strings.HasSuffix(key, "."+name) {
			value := "VALUE"
			for i, a := range args {
				if strings.TrimLeft(a, "-") == name && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
					value = args[i+1]
				}
			}
			return fmt.Sprintf(" (did you mean -set %s=%s?)", key, msg.Clean(value))
		}
	}
	return ""
}

// suggestSplit recognises "-set key value", which leaves value as a stray
// argument, and suggests "-set key=value".
func suggestSplit(fs *flag.FlagSet, args []string) string {
	at := len(args) - fs.NArg() // the first stray argument
	if at < 2 || fs.Lookup("set") == nil || strings.TrimLeft(args[at-2], "-") != "set" || strings.Contains(args[at-1], "=") {
		return ""
	}
	return fmt.Sprintf(" (did you mean -set %s=%s?)", msg.Clean(args[at-1]), msg.Clean(args[at]))
}
