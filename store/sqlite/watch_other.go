//go:build !linux

package sqlite

// watchState is empty off Linux: the driver does not implement driver.Watcher, so Watch
// answers store.ErrWatchUnsupported and the Elector polls.
type watchState struct{}

func (s *backend) closeWatches() {}
