package cluster

import "github.com/leasehold/leasehold/internal/logcapture"

// logCapture collects JSON log records for assertions.
type logCapture = logcapture.Capture
