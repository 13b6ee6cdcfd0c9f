// Package layout holds no code: its test holds the imports of every package
// of the module to the table docs/design.md draws, so the document says
// what the code does, and keeps internal/ free of the domain.
package layout
