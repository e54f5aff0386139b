package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Bad flags are usage errors naming the flag at fault.
func TestOptionsNameTheFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--lease", "1500ms"}, "--lease"},
		{[]string{"--lease", "1s", "--renew", "800ms"}, "--renew"},
		{[]string{"--instances", "3,x"}, "--instances"},
		{[]string{"--many", "0"}, "--many"},
		{[]string{"--many-via", "elector,holders"}, "--many-via"},
		{[]string{"--trials", "0"}, "--trials"},
		{[]string{"--latency-instances", "1"}, "--latency-instances"},
		{[]string{"--window", "0s"}, "--window"},
		{[]string{"--partitions", "64,x"}, "--partitions"},
		{[]string{"--partitions", "64", "--partitions-instances", "3,1"}, "--partitions-instances"},
		{[]string{"--partitions-max-moves", "0"}, "--partitions-max-moves"},
	} {
		_, err := parseOptions(c.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("%v: error %v, want one naming %s", c.args, err, c.flag)
		}
	}
	if code := run(t.Context(), []string{"--trials", "x"}, nil, io.Discard, io.Discard); code != 2 {
		t.Errorf("bad flag: exit %d, want 2", code)
	}
	o, err := parseOptions(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.L != 2*time.Second || o.R != 500*time.Millisecond || o.Trials != 30 || len(o.Backends) != len(allBackends) {
		t.Errorf("defaults: %+v", o)
	}
}

func TestQuantile(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 100; i++ {
		s = append(s, time.Duration(i))
	}
	d := summarize(s)
	if d.P50 != 50 || d.P90 != 90 || d.P99 != 99 || d.Max != 100 || d.N != 100 {
		t.Errorf("summary of 1..100: %+v", d)
	}
	if d := summarize([]time.Duration{7}); d.P50 != 7 || d.P99 != 7 {
		t.Errorf("summary of one sample: %+v", d)
	}
	if quantile(nil, 0.5) != 0 {
		t.Errorf("quantile of nothing is not 0")
	}
}

func TestStatsLineRoundTrip(t *testing.T) {
	in := statsLine{ID: "leasehold-w3", Requests: 42, CPU: 1234567, RSS: 65 << 20}
	got, err := parseStats(in.String())
	if err != nil || got != in {
		t.Errorf("parseStats(%q) = %+v, %v", in.String(), got, err)
	}
	if _, err := parseStats(statsPrefix + "w1 1 2"); err == nil {
		t.Errorf("a short stats line parses")
	}
}

func TestParsePressure(t *testing.T) {
	in := "some avg10=9.68 avg60=17.02 avg300=23.93 total=470489880\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
	if d, ok := parsePressure([]byte(in)); !ok || d != 470489880*time.Microsecond {
		t.Errorf("parsePressure: %v, %v; want 470.48988s, true", d, ok)
	}
	for _, bad := range []string{"", "full avg10=0 total=5\n", "some avg10=1 total=x\n"} {
		if d, ok := parsePressure([]byte(bad)); ok {
			t.Errorf("parsePressure(%q) = %v, true; want false", bad, d)
		}
	}
}

// A handover above the target is listed under the takeover tables, with its CPU pressure.
func TestSlowHandoversListed(t *testing.T) {
	rep := &report{Systems: []sysResult{{System: system{Name: "leasehold/file"}, SlowHandovers: []string{"handover a → b took 349ms"}}}}
	var b strings.Builder
	if err := writeMarkdown(&b, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "- leasehold/file: handover a → b took 349ms\n") {
		t.Errorf("the slow handover is not listed:\n%s", b.String())
	}
}

// TestStartProfile: with LEASEHOLD_BENCH_PROFILE set, a measurement window leaves its CPU and
// allocation profiles in that directory; without it, nothing.
func TestStartProfile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(envProfile, "")
	startProfile()()
	t.Setenv(envProfile, dir)
	startProfile()()
	for _, kind := range []string{"cpu", "allocs"} {
		name := filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", kind, os.Getpid()))
		if st, err := os.Stat(name); err != nil || st.Size() == 0 {
			t.Errorf("%s profile %s: %v", kind, name, err)
		}
	}
}
