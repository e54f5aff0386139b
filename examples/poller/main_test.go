package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testenv"
)

// TestREADMEShowsThisProgram: the README's quick start is this program and its app.json,
// word for word, so the code a reader copies is the code that is built and tested here.
func TestREADMEShowsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	quick := string(readme)
	i := strings.Index(quick, "## Quick start")
	if i < 0 {
		t.Fatal("README has no Quick start section")
	}
	quick = quick[i:]
	if j := strings.Index(quick[1:], "\n## "); j >= 0 {
		quick = quick[:j+1]
	}
	for _, c := range []struct{ lang, file string }{{"go", "main.go"}, {"json", "app.json"}} {
		want, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile("(?s)```" + c.lang + "\n(.*?)```").FindStringSubmatch(quick)
		if m == nil {
			t.Errorf("README's Quick start has no %s block", c.lang)
			continue
		}
		if m[1] != string(want) {
			t.Errorf("README's Quick start %s block differs from examples/poller/%s: copy the file into the README", c.lang, c.file)
		}
	}
}

// TestTwoReplicas builds the quick start and runs two replicas of it over one PostgreSQL
// Registry: one polls, the other waits; when the first is stopped, the second polls, in a
// later term.
func TestTwoReplicas(t *testing.T) {
	url := testenv.Postgres.URL(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "poller")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cfg := map[string]any{"services": map[string]any{
		"Registry": map[string]any{"type": "Webda/PostgresStore", "url": url,
			"table": fmt.Sprintf("poller_test_%d", time.Now().UnixNano())},
		"cluster": map[string]any{"type": "Webda/StoreClusterService", "leaseDuration": 1000, "renewInterval": 250},
		"poller":  map[string]any{"type": "MyApp/Poller", "interval": "20ms"},
	}}
	data, _ := json.Marshal(cfg)
	path := filepath.Join(dir, "app.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	type line struct {
		replica int
		text    string
	}
	lines := make(chan line, 1024)
	start := func(n int) *exec.Cmd {
		cmd := exec.Command(bin, path)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				lines <- line{n, sc.Text()}
			}
		}()
		return cmd
	}
	polled := regexp.MustCompile(`polled in term (\d+)`)
	// next returns the first poll line, failing on a poll by the replica that must not poll.
	next := func(not int) (int, string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case l := <-lines:
				m := polled.FindStringSubmatch(l.text)
				if m == nil {
					continue
				}
				if l.replica == not {
					t.Fatalf("replica %d polled while it must not: %s", l.replica, l.text)
				}
				return l.replica, m[1]
			case <-deadline:
				t.Fatal("no replica polled within 30s")
			}
		}
	}

	replicas := []*exec.Cmd{start(0), start(1)}
	leader, term := next(-1)
	first, _ := strconv.Atoi(term)
	// A few more polls: every one from the same replica.
	for range 5 {
		if r, _ := next(1 - leader); r != leader {
			t.Fatalf("poll by replica %d while %d leads", r, leader)
		}
	}
	if err := replicas[leader].Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := replicas[leader].Wait(); err != nil {
		t.Fatalf("replica %d after SIGTERM: %v", leader, err)
	}
	// Lines the stopped replica printed before it exited may still be queued.
	for {
		r, term2 := next(-1)
		if r == leader {
			continue
		}
		if n, _ := strconv.Atoi(term2); n <= first {
			t.Fatalf("the new leader polled in term %d, not after the first leader's term %d", n, first)
		}
		return
	}
}
