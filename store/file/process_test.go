package file

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/proctest"
	"github.com/leasehold/leasehold/store"
)

// The cross-process tests (T6) run the test binary again as helper processes: TestMain sends
// a process started with envHelper set to the helper it names instead of the tests.
const (
	envHelper = "LEASEHOLD_FILE_HELPER" // hammer, writer or crash
	envPath   = "LEASEHOLD_FILE_PATH"
	envID     = "LEASEHOLD_FILE_ID"
	envRounds = "LEASEHOLD_FILE_ROUNDS"
	envStage  = "LEASEHOLD_FILE_STAGE"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envHelper); mode != "" {
		if err := helper(mode); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helper runs one helper process. It reports on stdout, one event a line.
func helper(mode string) error {
	s, err := Open(os.Getenv(envPath))
	if err != nil {
		return err
	}
	defer s.Close()
	ctx := context.Background()
	switch mode {
	case "hammer":
		return hammer(ctx, s)
	case "writer":
		// Writes back to back until killed, reporting each counter value once it is written.
		for {
			n, err := increment(ctx, s)
			if err != nil {
				return err
			}
			if n > 0 {
				fmt.Println("wrote", n)
			}
		}
	case "crash":
		stage := os.Getenv(envStage)
		testHook = func(at string) {
			if at == stage {
				fmt.Println("at", at)
				// Wait to be killed: blocked in a read, which the runtime does not report as
				// a deadlock, as it would an empty select.
				io.Copy(io.Discard, os.Stdin)
				os.Exit(3)
			}
		}
		_, err := increment(ctx, s)
		return err
	}
	return fmt.Errorf("unknown helper %q", mode)
}

// hammer waits for "go" on stdin, then for each round races the other processes to create the
// round's key and to patch it under a condition, and tries to increment the shared counter.
func hammer(ctx context.Context, s *Store) error {
	id := os.Getenv(envID)
	rounds, err := strconv.Atoi(os.Getenv(envRounds))
	if err != nil {
		return err
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	for r := range rounds {
		key := fmt.Sprintf("round-%d", r)
		err := s.Create(ctx, key, map[string]any{"creator": id, "v": 0})
		switch {
		case err == nil:
			fmt.Println("create", r)
		case !errors.Is(err, store.ErrExists):
			return err
		}
		err = s.Patch(ctx, key, map[string]any{"patcher": id, "v": 1}, &store.Condition{Field: "v", Value: 0})
		switch {
		case err == nil:
			fmt.Println("patch", r)
		case !errors.Is(err, store.ErrConditionFailed):
			return err
		}
		n, err := increment(ctx, s)
		if err != nil {
			return err
		}
		if n > 0 {
			fmt.Println("inc")
		}
	}
	fmt.Println("done")
	return nil
}

// increment reads the counter and writes it plus one under the condition that it is
// unchanged. It returns the value written, or 0 when another writer won.
func increment(ctx context.Context, s *Store) (int, error) {
	doc, err := s.Get(ctx, "counter")
	if err != nil {
		return 0, err
	}
	n, _ := doc["n"].(float64)
	err = s.Patch(ctx, "counter", map[string]any{"n": n + 1}, &store.Condition{Field: "n", Value: n})
	if errors.Is(err, store.ErrConditionFailed) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return int(n) + 1, nil
}

// child is a helper process.
type child struct {
	t     *testing.T
	name  string
	p     *proctest.Proc
	lines chan string // stdout, a line at a time; closed once the helper has exited
	seen  []string
}

func startChild(t *testing.T, name string, env ...string) *child {
	t.Helper()
	c := &child{t: t, name: name, lines: make(chan string, 1024)}
	var err error
	c.p, err = proctest.Start(proctest.Spec{
		Name: name,
		Path: os.Args[0],
		Args: []string{"-test.run=^$"},
		Env:  env,
		Line: func(line string) { c.lines <- line },
		Exit: func(error) { close(c.lines) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A test that failed half-way must not leave processes behind.
		c.p.Kill()
		for range c.lines {
		}
	})
	return c
}

// waitFor returns the first line from the child that satisfies ok, failing the test if the
// child ends first.
func (c *child) waitFor(ok func(string) bool) string {
	c.t.Helper()
	for line := range c.lines {
		c.seen = append(c.seen, line)
		if ok(line) {
			return line
		}
	}
	c.t.Fatalf("%s ended (%v) before the expected line; stdout: %q%s", c.name, c.p.Wait(), c.seen, c.p.StderrTail(8<<10))
	return ""
}

// wait reads the child's remaining output, waits for it to exit and returns all it printed.
func (c *child) wait() ([]string, error) {
	for line := range c.lines {
		c.seen = append(c.seen, line)
	}
	err := c.p.Wait()
	if err != nil {
		err = fmt.Errorf("%s: %w%s", c.name, err, c.p.StderrTail(8<<10))
	}
	return c.seen, err
}

func (c *child) kill() {
	c.t.Helper()
	if err := c.p.Signal(syscall.SIGKILL); err != nil {
		c.t.Fatal(err)
	}
	c.wait()
}

func createCounter(t *testing.T, path string) {
	t.Helper()
	s := mustOpen(t, path)
	if err := s.Create(t.Context(), "counter", map[string]any{"n": 0}); err != nil {
		t.Fatal(err)
	}
}

// T6, T1, T2 across processes: 4 processes race on one file, round after round, to create a
// key and to patch it under a condition, and increment a counter by conditional patches.
// Exactly one process wins each race, no increment is lost, and the file stays valid.
func TestProcessesHammerOneFile(t *testing.T) {
	const procs, rounds = 4, 40
	path := newPath(t)
	createCounter(t, path)
	children := make([]*child, procs)
	for i := range children {
		children[i] = startChild(t, fmt.Sprintf("process %d", i),
			envHelper+"=hammer", envPath+"="+path, envID+"="+strconv.Itoa(i), envRounds+"="+strconv.Itoa(rounds))
	}
	// Start them together, once all are ready, so that they do race.
	for _, c := range children {
		c.waitFor(func(l string) bool { return l == "ready" })
	}
	for _, c := range children {
		if _, err := io.WriteString(c.p.Stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	creators := map[string][]string{} // round → ids of the processes that won
	patchers := map[string][]string{}
	incs := 0
	for i, c := range children {
		out, err := c.wait()
		if err != nil {
			t.Fatal(err)
		}
		if len(out) == 0 || out[len(out)-1] != "done" {
			t.Fatalf("process %d did not finish: %q", i, out)
		}
		for _, line := range out {
			verb, round, _ := strings.Cut(line, " ")
			switch verb {
			case "create":
				creators[round] = append(creators[round], strconv.Itoa(i))
			case "patch":
				patchers[round] = append(patchers[round], strconv.Itoa(i))
			case "inc":
				incs++
			}
		}
	}
	docs := fileDocs(t, path)
	for r := range rounds {
		round := strconv.Itoa(r)
		if len(creators[round]) != 1 || len(patchers[round]) != 1 {
			t.Errorf("round %d: creators %v, patchers %v; want exactly one of each (T1, T2)", r, creators[round], patchers[round])
			continue
		}
		doc := docs["round-"+round]
		if doc["creator"] != creators[round][0] || doc["patcher"] != patchers[round][0] || doc["v"] != 1.0 {
			t.Errorf("round %d: file holds %v; winners: creator %s, patcher %s", r, doc, creators[round][0], patchers[round][0])
		}
	}
	if n := docs["counter"]["n"]; incs == 0 || n != float64(incs) {
		t.Errorf("counter is %v after %d successful increments: an update was lost", n, incs)
	}
	if tmp := temps(t, path); len(tmp) != 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
	t.Logf("%d processes, %d rounds: %d successful increments", procs, rounds, incs)
}

// T6: a process killed with SIGKILL while it writes back to back leaves a valid file that holds
// every write it reported, and the lock it held is free.
func TestProcessKilledWhileWriting(t *testing.T) {
	path := newPath(t)
	createCounter(t, path)
	last := 0
	for i := range 3 {
		c := startChild(t, fmt.Sprintf("writer %d", i), envHelper+"=writer", envPath+"="+path)
		target := last + 20 + 7*i // kill at a different point each time
		line := c.waitFor(func(l string) bool {
			n, err := strconv.Atoi(strings.TrimPrefix(l, "wrote "))
			return err == nil && n >= target
		})
		c.kill()
		last, _ = strconv.Atoi(strings.TrimPrefix(line, "wrote "))
		s, err := Open(path)
		if err != nil {
			t.Fatalf("Open after the kill: %v", err)
		}
		doc, err := s.Get(t.Context(), "counter")
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if n := doc["n"].(float64); n < float64(last) {
			t.Fatalf("counter is %v, but the writer had reported writing %d", n, last)
		}
		last = int(doc["n"].(float64))
	}
	if docs := fileDocs(t, path); docs["counter"]["n"] != float64(last) {
		t.Fatalf("file holds %v", docs)
	}
}

// T6: a writer killed between the stages of a write leaves the old file (before the rename) or
// the new one (after it), never a mix; its temporary file is never read, and Open removes it.
func TestProcessKilledMidWrite(t *testing.T) {
	for _, tc := range []struct {
		stage string
		want  float64 // counter value the file holds afterwards
		temp  bool    // whether the temporary file is left behind
	}{
		{"temp-synced", 1, true},
		{"renamed", 2, false},
	} {
		t.Run(tc.stage, func(t *testing.T) {
			path := newPath(t)
			createCounter(t, path)
			s := mustOpen(t, path)
			if err := s.Patch(t.Context(), "counter", map[string]any{"n": 1}, nil); err != nil {
				t.Fatal(err)
			}
			before := readFile(t, path)
			c := startChild(t, "writer", envHelper+"=crash", envPath+"="+path, envStage+"="+tc.stage)
			c.waitFor(func(l string) bool { return l == "at "+tc.stage })
			c.kill()
			if got := temps(t, path); (len(got) > 0) != tc.temp {
				t.Errorf("temporary files after the kill: %v, want some: %v", got, tc.temp)
			}
			if !tc.temp {
				if bytes.Equal(readFile(t, path), before) {
					t.Error("the file is unchanged after the rename")
				}
			} else {
				wantUnchanged(t, path, before)
			}
			// The kill released the writer's lock: these do not wait for it.
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if doc, err := s.Get(ctx, "counter"); err != nil || doc["n"] != tc.want {
				t.Fatalf("Get after the kill: %v, %v; want n=%v", doc, err, tc.want)
			}
			reopened := mustOpen(t, path)
			if got := temps(t, path); len(got) != 0 {
				t.Errorf("Open left the temporary files %v", got)
			}
			if err := reopened.Patch(ctx, "counter", map[string]any{"n": tc.want + 1}, &store.Condition{Field: "n", Value: tc.want}); err != nil {
				t.Fatalf("Patch after the kill: %v", err)
			}
			if n := fileDocs(t, path)["counter"]["n"]; n != tc.want+1 {
				t.Fatalf("counter %v after the patch", n)
			}
		})
	}
}
