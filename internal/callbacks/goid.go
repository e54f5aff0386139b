package callbacks

import (
	"runtime"
	"strconv"
	"strings"
)

// goid returns the calling goroutine's ID, or 0 if it cannot be read. Go gives goroutines no
// identity on purpose; remove needs one all the same, to tell a call from the registration's
// own callback (which must not wait for itself) from a call on another goroutine (which must
// wait for that callback). The ID is the number in the stack header, "goroutine 18 [...]".
//
// Nothing else can tell them apart. remove takes no argument (Cluster.WhenLeader fixes its
// type, and deregistered has none to pass either), so a token or a context value the callback
// carries never reaches it; and while a callback runs, a call from that callback and one from
// any other goroutine (another registration's callback, a goroutine the callback started)
// find the same state, yet the first must return at once and the others must wait. In package
// cluster, TestW6RemoveFromOwnCallbacks fails if the own call waits; TestW6RemoveWaitsForFn,
// TestW6RemoveFromAnotherRegistrationsFn and TestW6RemoveFromGoroutineOfFn fail if any call
// made while a callback runs is taken for the callback's own.
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
