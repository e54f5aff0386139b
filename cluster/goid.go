package cluster

import (
	"runtime"
	"strconv"
	"strings"
)

// goid returns the calling goroutine's ID, or 0 if it cannot be read. Go gives goroutines no
// identity on purpose; remove needs one all the same, to tell a call from the registration's
// own callback (which must not wait for itself) from a call on another goroutine (which must
// wait for that callback). The ID is the number in the stack header, "goroutine 18 [...]".
func goid() uint64 {
	var buf [64]byte
	s := string(buf[:runtime.Stack(buf[:], false)])
	s, ok := strings.CutPrefix(s, "goroutine ")
	if !ok {
		return 0
	}
	if i := strings.IndexByte(s, ' '); i > 0 {
		s = s[:i]
	}
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0
	}
	return id
}
