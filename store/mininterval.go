package store

import "time"

// MinWriteInterval is implemented by a store that accepts writes to one key no more often
// than an interval (Google Cloud Storage: about one a second per object). An election over it
// whose renew interval R is shorter, with a write to its record every R, is refused when it
// is constructed rather than throttled at run time.
type MinWriteInterval interface {
	// MinWriteInterval returns the shortest interval between two writes to one key, and why,
	// naming the store ("store/gcs: ...").
	MinWriteInterval() (time.Duration, string)
}

// WriteInterval returns what s, or the store it wraps (a service's opened store, reached by
// a Store() method), says of its writes through [MinWriteInterval]: 0 and "" when it sets no
// bound.
func WriteInterval(s Store) (time.Duration, string) {
	for range 4 { // wrappers of wrappers, never a cycle
		if m, ok := s.(MinWriteInterval); ok {
			return m.MinWriteInterval()
		}
		w, ok := s.(interface{ Store() Store })
		if !ok {
			break
		}
		if s = w.Store(); s == nil {
			break
		}
	}
	return 0, ""
}
