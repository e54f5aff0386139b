//go:build !unix

package file

import (
	"fmt"
	"os"
	"runtime"
)

const supported = false

var errUnsupported = fmt.Errorf("file store: not supported on %s (it needs flock)", runtime.GOOS)

func openLockFile(string) (*os.File, bool, error) { return nil, false, errUnsupported }
func tryLock(*os.File, bool) (bool, error)        { return false, errUnsupported }
func blockLock(*os.File, bool) error              { return errUnsupported }
func unlock(*os.File) error                       { return errUnsupported }
func versionOf(gen uint64, fi os.FileInfo) version {
	return version{gen: gen, exists: true, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}
