//go:build linux

package supervise

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CMD starts only while its leadership is current (C1): a leadership that ends between the
// decision to start CMD and its start never starts it, even though the keeper is running
// already. Without the end, the same supervisor starts CMD.
func TestCMDStartsOnlyWhileLeading(t *testing.T) {
	for _, ends := range []bool{true, false} {
		dir := t.TempDir()
		marker := filepath.Join(dir, "started")
		var logs bytes.Buffer
		s := New(Config{
			Argv: []string{"/bin/sh", "-c", `echo started > "$1"`, "sh", marker}, Env: os.Environ(),
			Lease: "jobs", ID: "a", Grace: testGrace, Log: slog.New(slog.NewTextHandler(&logs, nil)),
		})
		ctx, cancel := context.WithCancel(context.Background())
		if ends {
			s.beforeStart = cancel // the leadership ends just as CMD is about to start
		}
		if err := s.Lead(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		_, statErr := os.Stat(marker)
		v := s.State()
		switch {
		case ends && (statErr == nil || v.Starts != 0 || strings.Contains(logs.String(), "started CMD")):
			t.Errorf("the leadership ended before CMD started, and CMD started all the same (starts %d)\n%s", v.Starts, logs.String())
		case ends && !strings.Contains(logs.String(), "leadership ended before CMD started"):
			t.Errorf("no log line saying CMD was not started:\n%s", logs.String())
		case !ends && (statErr != nil || v.Starts != 1):
			t.Errorf("a current leadership did not start CMD: %v, starts %d\n%s", statErr, v.Starts, logs.String())
		}
		select {
		case status := <-s.Exited():
			if ends {
				t.Errorf("CMD that never started reported an exit status %d", status)
			}
		default:
			if !ends {
				t.Errorf("CMD that exited by itself reported no exit status")
			}
		}
	}
}
