// Package logcapture collects a logger's JSON records for a test's assertions.
package logcapture

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
)

// Capture collects the JSON records of the loggers it makes. Its zero value is ready.
type Capture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write takes one or more records, as slog's JSON handler writes them.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

// Logger returns a logger writing every record, debug included, to c.
func (c *Capture) Logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(c, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// All returns every record so far, decoded.
func (c *Capture) All() []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(c.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// Find returns the records whose message is msg.
func (c *Capture) Find(msg string) []map[string]any {
	var out []map[string]any
	for _, r := range c.All() {
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}
