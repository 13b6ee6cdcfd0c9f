// Package msg formats user-supplied values for one-line error messages.
//
// Conventions:
//   - A value is shown whole up to MaxShown bytes. A longer one shows its
//     first MaxShown bytes (cut at a character boundary), "...", and its
//     length: a 100,000-digit seed gives a line of about 100 characters, not
//     of 100 KB.
//   - Quote always quotes (Go syntax, so a newline cannot break the line);
//     Clean quotes only a value holding a character that needs it.
//   - Nothing this package returns holds a character escape.Unsafe names
//     (C0, DEL, C1, format characters, U+2028/9) or invalid UTF-8: Quote and
//     Clean Go-quote them, Shorten escapes them as escape.Label does. A value
//     from a file reaches a message through one of the three, or Go's %q.
package msg
