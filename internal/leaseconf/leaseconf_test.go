package leaseconf

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestTiming(t *testing.T) {
	flags := Names{LeaseDuration: "--lease-duration", RenewInterval: "--renew-interval"}
	for _, c := range []struct {
		l, r         time.Duration
		wantL, wantR time.Duration
		err          string // a part of the error, "" for none
	}{
		{0, 0, DefaultLeaseDuration, DefaultRenewInterval, ""},
		{time.Second, 250 * time.Millisecond, time.Second, 250 * time.Millisecond, ""},
		{-time.Second, 0, 0, 0, "--lease-duration -1s must be positive"},
		{time.Second, time.Second, 0, 0, "--renew-interval 1s must be positive and less than --lease-duration 1s"},
		{time.Second, -time.Millisecond, 0, 0, "--renew-interval -1ms"},
		{2 * time.Second, 0, 0, 0, "--renew-interval 5s"}, // the default R is not below this L
	} {
		l, r, err := Timing(c.l, c.r, flags)
		if c.err == "" {
			if err != nil || l != c.wantL || r != c.wantR {
				t.Errorf("Timing(%v, %v) = %v, %v, %v; want %v, %v", c.l, c.r, l, r, err, c.wantL, c.wantR)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("Timing(%v, %v) error %v; want one saying %q", c.l, c.r, err, c.err)
		}
	}
}

func TestLeaseName(t *testing.T) {
	if got := LeaseName(""); got != DefaultLeaseName {
		t.Errorf("LeaseName(\"\") = %q; want %q", got, DefaultLeaseName)
	}
	if got := LeaseName("cron"); got != "cron" {
		t.Errorf("LeaseName(\"cron\") = %q", got)
	}
}

func TestCheckValue(t *testing.T) {
	if err := CheckValue("--advertise", "10.0.0.7:8080"); err != nil {
		t.Errorf("a one-line value refused: %v", err)
	}
	if err := CheckValue("--advertise", strings.Repeat("x", MaxValueBytes)); err != nil {
		t.Errorf("a value of MaxValueBytes refused: %v", err)
	}
	for v, want := range map[string]string{
		strings.Repeat("x", MaxValueBytes+1): "--advertise: the value is 1025 bytes, at most 1024",
		"a\nb":                               "--advertise: the value must be one line",
		"a\rb":                               "--advertise: the value must be one line",
	} {
		if err := CheckValue("--advertise", v); err == nil || err.Error() != want {
			t.Errorf("CheckValue(%.20q) = %v; want %q", v, err, want)
		}
	}
}

type dashNamer struct{}

func (dashNamer) SlotName(lease string, slot int) string { return lease + "-" + strconv.Itoa(slot) }

func TestSlotName(t *testing.T) {
	for _, c := range []struct {
		lock    any
		lease   string
		slot, n int
		want    string
	}{
		{nil, "jobs", 0, 1, "jobs"}, {nil, "jobs", 2, 3, "jobs/2"}, {nil, "", 1, 2, DefaultLeaseName + "/1"},
		{dashNamer{}, "jobs", 1, 2, "jobs-1"}, {dashNamer{}, "jobs", 0, 1, "jobs"},
	} {
		if got := SlotName(c.lock, c.lease, c.slot, c.n); got != c.want {
			t.Errorf("SlotName(%T, %q, %d, %d) = %q; want %q", c.lock, c.lease, c.slot, c.n, got, c.want)
		}
	}
}
