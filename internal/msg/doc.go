// Package msg formats user-supplied values for one-line error messages.
//
// Conventions:
//   - A value is shown whole up to MaxShown bytes. A longer one shows its
//     first MaxShown bytes (cut at a character boundary), "...", and its
//     length: a 100,000-digit seed gives a line of about 100 characters, not
//     of 100 KB.
//   - Quote always quotes (Go syntax, so a newline cannot break the line);
//     Clean quotes only a value holding a character that needs it.
package msg
