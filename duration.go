package leasehold

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a service parameter holding a duration: milliseconds as a JSON number (15000, as
// in Webda's configurations) or a Go duration string ("15s"). Negative durations are an error.
type Duration time.Duration

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("invalid duration %q: want milliseconds or a Go duration such as \"15s\"", s)
		}
		if v < 0 {
			return fmt.Errorf("negative duration %q", s)
		}
		*d = Duration(v)
		return nil
	}
	var ms float64
	if err := json.Unmarshal(b, &ms); err != nil {
		return fmt.Errorf("invalid duration %s: want milliseconds or a Go duration such as \"15s\"", b)
	}
	if ms < 0 {
		return fmt.Errorf("negative duration %s ms", b)
	}
	if ms > float64(1<<63-1)/float64(time.Millisecond) {
		return fmt.Errorf("duration %s ms is too large", b)
	}
	*d = Duration(ms * float64(time.Millisecond))
	return nil
}

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// D returns the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }
