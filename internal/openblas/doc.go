// Package openblas sets OpenBLAS's thread count through cgo. It has code
// only under the openblas build tag (needs Debian's libopenblas-dev); it is a
// package of its own because a package using cgo cannot also hold Go
// assembly, which package internal/kernels does.
package openblas
