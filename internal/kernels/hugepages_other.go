//go:build !linux

package kernels

// HugePages does nothing outside Linux (see hugepages_linux.go).
func HugePages(xs ...[]float32) {}
