package storetest

import "time"

// SetWatchWait sets how long each wait for a watch's call lasts, for the runs of the suite on
// broken stores, whose defects make some waits last until this bound.
func SetWatchWait(d time.Duration) { watchWait = d }
