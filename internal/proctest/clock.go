package proctest

import "time"

// at converts t, read from this process's clock (time.Now, with its monotonic reading), to
// the shared clock of Now: it subtracts the monotonic time elapsed since t from Now.
func at(t time.Time) int64 { return Now() - int64(time.Since(t)) }
