// Package layout holds no code: its tests hold the imports of every package
// of the module to the table docs/design.md draws, so the document says
// what the code does, and keeps internal/ free of the domain; and every Go
// name a package's doc.go gives to a name the module declares.
package layout
