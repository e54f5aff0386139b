package leasehold

import (
	"strings"
	"testing"
	"time"
)

// ParseDuration reads both forms of a configuration's duration, as UnmarshalJSON does.
func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"5000": 5 * time.Second, "1.5": 1500 * time.Microsecond, "0": 0, "1e3": time.Second,
		"5s": 5 * time.Second, "250ms": 250 * time.Millisecond, "1m30s": 90 * time.Second, "0s": 0,
	} {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
		var d Duration
		json := in
		if strings.ContainsAny(in, "smh") {
			json = `"` + in + `"`
		}
		if err := d.UnmarshalJSON([]byte(json)); err != nil || d.D() != want {
			t.Errorf("UnmarshalJSON(%s) = %v, %v; want %v", json, d.D(), err, want)
		}
	}
	for in, want := range map[string]string{
		"": "invalid duration", "soon": `invalid duration "soon"`, "5 s": "invalid duration", "-1": "negative duration -1 ms",
		"-1s": `negative duration "-1s"`, "1e30": "too large", "0x10": "invalid duration", "NaN": "invalid duration",
		"15s ": "invalid duration", "1_000": "invalid duration",
	} {
		if got, err := ParseDuration(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDuration(%q) = %v, %v; want an error with %q", in, got, err, want)
		}
	}
}
