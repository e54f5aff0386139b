//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasehold/leasehold/internal/testenv"
)

// jsonLines returns p's output lines that are JSON log records.
func (p *proc) jsonLines() []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []map[string]any
	for _, l := range p.output {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] != nil {
			out = append(out, m)
		}
	}
	return out
}

// Replicas that start together race to create the lease record: the losers say so at INFO,
// not as a failed attempt. The race is made certain: the test holds a lock on the table that
// lets the replicas read it (no record) but makes their inserts wait, until all of them wait;
// released, one insert wins and the others find the record there.
func TestLostCreationRaceIsInfo(t *testing.T) {
	base := testenv.Postgres.URL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	table := fmt.Sprintf("lh_race_%d", time.Now().UnixNano())
	if _, err := conn.Exec(ctx, `CREATE TABLE `+table+` (id text PRIMARY KEY, doc jsonb NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.Background(), `DROP TABLE `+table)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE `+table+` IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}

	w := newWorld(t)
	const n = 4
	var procs []*proc
	for i := range n {
		procs = append(procs, w.start(fmt.Sprint(i), []string{"LEASEHOLD_TEST_CMD=record"},
			append([]string{"run", "--store", base + "&table=" + table, "--lease", "jobs", "--lease-duration", "5s",
				"--renew-interval", "1s", "--instance-id", fmt.Sprint("r", i), "--log-format", "json", "--"}, helperCmd()...)...))
	}
	deadline := time.Now().Add(30 * time.Second)
	for waiting := 0; waiting < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d replicas wait to create the record after 30s, want %d", waiting, n)
		}
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE relation = $1::regclass AND NOT granted`, table).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	w.waitCmd(10*time.Second, "CMD-START", nil)
	time.Sleep(500 * time.Millisecond) // the losers' lines follow the winner's

	lost := 0
	for _, p := range procs {
		for _, m := range p.jsonLines() {
			if m["level"] == "WARN" || m["level"] == "ERROR" {
				t.Errorf("%s logged %s", p.name, mustJSON(m))
			}
			if m["msg"] == "leasehold: lost the race to create the lease" {
				lost++
				if m["level"] != "INFO" {
					t.Errorf("%s: %s, want it at INFO", p.name, mustJSON(m))
				}
			}
		}
	}
	if lost != n-1 {
		t.Errorf("%d replicas logged the lost race, want %d", lost, n-1)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// After failed attempts, the first success is logged once, at INFO, with the number of failures
// and how long they lasted; durations in JSON logs are text a person reads ("2s"), not
// nanoseconds. The failures come from a store that hangs: the test holds its lock file's flock.
func TestLogRecoveryAndDurations(t *testing.T) {
	w := newWorld(t)
	p := w.start("a", []string{"LEASEHOLD_TEST_CMD=record"}, runArgs(w, "a", "--grace", "300ms")...)
	joined := w.logLine(30*time.Second, "leasehold: joined the election")
	for key, want := range map[string]string{"leaseDuration": testLs, "renewInterval": testRs, "grace": "300ms"} {
		if joined[key] != want {
			t.Errorf("joined the election: %s = %#v, want %q", key, joined[key], want)
		}
	}
	w.waitCmd(30*time.Second, "CMD-START", nil)

	lock, err := os.OpenFile(filepath.Join(w.dir, "registry.json.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	hungAt := time.Now()
	for range 2 {
		w.logLine(2*testL+slack, "leasehold: attempt failed")
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	back := w.logLine(2*testL+slack, "leasehold: attempts succeed again")
	failures, _ := back["failures"].(float64)
	after, err := time.ParseDuration(fmt.Sprint(back["after"]))
	if back["level"] != "INFO" || failures < 2 || err != nil || after <= 0 || after > time.Since(hungAt) {
		t.Errorf("recovery line %s: want INFO, failures >= 2, after a duration such as \"1.5s\" within the %v the store hung",
			mustJSON(back), time.Since(hungAt).Round(time.Millisecond))
	}
	w.waitCmd(2*testL+slack, "CMD-START", nil)
	time.Sleep(2 * testR)
	n := 0
	for _, m := range p.jsonLines() {
		if m["msg"] == "leasehold: attempts succeed again" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the recovery was logged %d times, want once", n)
	}
}

// A follower that is stopped says so, naming the leader it followed; a leader's stop is the
// Elector's lines (stopped leading, released).
func TestFollowerStopIsLogged(t *testing.T) {
	w := newWorld(t)
	leader := w.start("leader", []string{"LEASEHOLD_TEST_CMD=record"}, runArgs(w, "lead-1")...)
	w.waitCmd(30*time.Second, "CMD-START", nil)
	follower := w.start("follower", []string{"LEASEHOLD_TEST_CMD=record"}, runArgs(w, "follow-1")...)
	w.logLine(30*time.Second, "leasehold: observed leader")
	if err := follower.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := w.waitExit(follower, 10*time.Second); code != 0 {
		t.Errorf("follower exited %d after SIGTERM, want 0", code)
	}
	var stopped map[string]any
	for _, m := range follower.jsonLines() {
		if strings.HasPrefix(fmt.Sprint(m["msg"]), "leasehold: stopped") {
			stopped = m
		}
	}
	if stopped == nil || stopped["msg"] != "leasehold: stopped following the leader" || stopped["holder"] != "lead-1" || stopped["level"] != "INFO" {
		t.Errorf("the follower's last stop line is %s, want msg \"leasehold: stopped following the leader\" with holder lead-1 at INFO", mustJSON(stopped))
	}
	if err := leader.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	w.waitExit(leader, 10*time.Second)
	for _, m := range leader.jsonLines() {
		if m["msg"] == "leasehold: stopped following the leader" {
			t.Errorf("the leader logged %s", mustJSON(m))
		}
	}
}
