// Package layout holds no code: its tests hold the imports of every package
// of the project to the table docs/design.md draws, so the document says
// what the code does, and keeps internal/ free of the domain; and every Go
// name a package's doc.go gives to a name the module declares. The
// project's packages are those in a top-level directory of a package the
// table lists; a user's program in a top-level directory of its own is left
// alone by these rules and by the size rules.
package layout
