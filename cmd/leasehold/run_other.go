//go:build !unix

package main

import (
	"errors"
	"io"
)

// runCommand needs process groups and POSIX signals: leasehold run is for unix systems.
func runCommand([]string, io.Writer, io.Writer) (int, error) {
	return 0, errors.New("leasehold run is not supported on this system (it needs process groups and POSIX signals)")
}
