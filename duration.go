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
		v, err := parseGoDuration(s)
		if err != nil {
			return err
		}
		*d = Duration(v)
		return nil
	}
	var ms float64
	if err := json.Unmarshal(b, &ms); err != nil {
		return fmt.Errorf("invalid duration %s: want milliseconds or a Go duration such as \"15s\"", b)
	}
	v, err := fromMillis(ms, string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// ParseDuration parses a duration written as text, in either form a configuration takes: a
// number of milliseconds ("15000", the JSON number's syntax) or a Go duration ("15s"), so that
// a command line reads a value as the configuration does. Negative durations are an error.
func ParseDuration(s string) (time.Duration, error) {
	// Only a number starts with a digit or a minus sign among JSON values.
	if s != "" && (s[0] == '-' || '0' <= s[0] && s[0] <= '9') && json.Valid([]byte(s)) {
		var ms float64
		if err := json.Unmarshal([]byte(s), &ms); err != nil {
			return 0, fmt.Errorf("invalid duration %s: want milliseconds or a Go duration such as \"15s\"", s)
		}
		return fromMillis(ms, s)
	}
	return parseGoDuration(s)
}

func parseGoDuration(s string) (time.Duration, error) {
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: want milliseconds or a Go duration such as \"15s\"", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("negative duration %q", s)
	}
	return v, nil
}

// fromMillis converts ms, written text, to a duration.
func fromMillis(ms float64, text string) (time.Duration, error) {
	if ms < 0 {
		return 0, fmt.Errorf("negative duration %s ms", text)
	}
	if ms > float64(1<<63-1)/float64(time.Millisecond) {
		return 0, fmt.Errorf("duration %s ms is too large", text)
	}
	return time.Duration(ms * float64(time.Millisecond)), nil
}

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// D returns the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }
