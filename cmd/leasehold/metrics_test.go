//go:build unix

package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// get fetches http://addr/path and returns the status code and body.
func get(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, string(body)
}

// scrape returns the samples of /metrics, by series ("name{labels}").
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	code, body := get(t, addr, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: status %d", code)
	}
	out := map[string]float64{}
	for _, l := range strings.Split(body, "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics: bad line %q", l)
		}
		out[l[:i]] = v
	}
	return out
}

func wantSample(t *testing.T, m map[string]float64, series string, want float64) {
	t.Helper()
	got, ok := m[series]
	if !ok {
		t.Errorf("/metrics has no %s", series)
	} else if got != want {
		t.Errorf("/metrics: %s = %v, want %v", series, got, want)
	}
}

// waitSample scrapes /metrics until series is at least min (an HTTP endpoint has nothing to
// wait on), and returns that scrape.
func waitSample(t *testing.T, addr, series string, min float64, timeout time.Duration) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		m := scrape(t, addr)
		if m[series] >= min {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics: %s = %v after %v, want at least %v", series, m[series], timeout, min)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitStatus polls /status until ok holds for what it answers (an HTTP endpoint has nothing to
// wait on), and returns that answer; it fails the test when ok still does not hold after
// timeout.
func waitStatus(t *testing.T, addr string, ok func(statusView) bool, timeout time.Duration) (statusView, string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		_, body := get(t, addr, "/status")
		var st statusView
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatalf("/status: %v: %s", err, body)
		}
		if ok(st) {
			return st, body
		}
		if time.Now().After(deadline) {
			t.Fatalf("/status after %v: %s", timeout, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitHealth polls /healthz until it answers want (an HTTP endpoint has nothing to wait on),
// and returns how long that took.
func waitHealth(t *testing.T, addr string, want int, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if code, _ := get(t, addr, "/healthz"); code == want {
			return time.Since(start)
		}
		select {
		case <-ctx.Done():
			code, body := get(t, addr, "/healthz")
			t.Fatalf("/healthz still answers %d %q after %v, want %d", code, body, timeout, want)
		case <-tick.C:
		}
	}
}

// /metrics exposes the election's metrics with the values of the moment; /healthz and /status
// follow it. When the store hangs (its lock file's flock is held by the test, so every call
// of the file store waits until its context ends), the leader stops leading by its deadline
// (E5) and stops CMD, attempts fail by timeout (E3), and /healthz turns unhealthy once no
// attempt has succeeded for L; when the store answers again, all comes back.
func TestMetricsAndHealthz(t *testing.T) {
	w := newWorld(t)
	p := w.start("a", []string{"LEASEHOLD_TEST_CMD=record"}, runArgs(w, "m-1", "--metrics-addr", "127.0.0.1:0")...)
	addr, _ := w.logLine(30*time.Second, "leasehold: serving /metrics, /healthz and /status")["addr"].(string)
	started, _ := w.waitCmd(30*time.Second, "CMD-START", nil)

	m := scrape(t, addr)
	wantSample(t, m, `leasehold_is_leader{lease="jobs"}`, 1)
	wantSample(t, m, `leasehold_term{lease="jobs"}`, float64(started.term))
	wantSample(t, m, `leasehold_transitions_total{kind="became_leader",lease="jobs"}`, 1)
	wantSample(t, m, `leasehold_transitions_total{kind="stopped_leading",lease="jobs"}`, 0)
	wantSample(t, m, `leasehold_attempt_failures_total{lease="jobs",reason="timeout"}`, 0)
	if n := m[`leasehold_attempt_duration_seconds_count{lease="jobs"}`]; n < 1 {
		t.Errorf("/metrics: attempt_duration_seconds_count = %v, want at least 1", n)
	}
	if code, body := get(t, addr, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz of a working leader: %d %q, want 200", code, body)
	}
	var st statusView
	_, body := get(t, addr, "/status")
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("/status: %v: %s", err, body)
	}
	if !st.Leader || st.Term != started.term || st.Instance != "m-1" || st.Lease != "jobs" || !st.Healthy || st.Command == nil || !st.Command.Running {
		t.Errorf("/status of a working leader: %s", body)
	}

	// Hang the store.
	lock, err := os.OpenFile(filepath.Join(w.dir, "registry.json.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	hungAt := time.Now()
	w.waitCmd(testL+slack, "CMD-STOP", nil) // E5: (L+R)/2 after the last successful attempt began
	waitHealth(t, addr, http.StatusServiceUnavailable, 2*testL+slack)
	if since := time.Since(hungAt); since > testL+slack {
		t.Errorf("/healthz turned unhealthy %v after the store hung, want within L = %v (+%v slack)", since, testL, slack)
	}
	w.waitLine(testL+slack, "attempt failed by timeout", func(l line) bool {
		var m map[string]any
		return json.Unmarshal([]byte(l.text), &m) == nil && m["msg"] == "leasehold: attempt failed" && m["reason"] == "timeout"
	})
	// The Elector tells its observers (the metrics among them) before it logs the failure
	// (ElectorConfig.Observer): the counter has moved when the line is read.
	m = waitSample(t, addr, `leasehold_attempt_failures_total{lease="jobs",reason="timeout"}`, 1, 0)
	wantSample(t, m, `leasehold_is_leader{lease="jobs"}`, 0)
	wantSample(t, m, `leasehold_transitions_total{kind="stopped_leading",lease="jobs"}`, 1)
	// CMD wrote CMD-STOP when its SIGTERM came; /status says it runs until it has exited and
	// been reaped, within the grace the supervisor gives it.
	st, body = waitStatus(t, addr, func(st statusView) bool { return st.Command != nil && !st.Command.Running }, testL)
	if st.Leader || st.Healthy || st.HealthError == "" || st.LastFailureReason != "timeout" || st.Command.Running {
		t.Errorf("/status with a hung store: %s", body)
	}

	// The store answers again: this instance leads again, CMD runs, /healthz is fine.
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	w.waitCmd(testL+slack, "CMD-START", nil)
	waitHealth(t, addr, http.StatusOK, testL+slack)
	wantSample(t, scrape(t, addr), `leasehold_is_leader{lease="jobs"}`, 1)

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := w.waitExit(p, 10*time.Second); code != 0 {
		t.Errorf("leasehold exited %d, want 0", code)
	}
}
