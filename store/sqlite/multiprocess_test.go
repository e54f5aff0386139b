package sqlite

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/leasehold/leasehold/store"
)

// The multi-process test runs this test binary again as child processes, which find their
// instructions in these variables.
const (
	childURLEnv    = "LEASEHOLD_SQLITE_CHILD_URL"
	childRoundsEnv = "LEASEHOLD_SQLITE_CHILD_ROUNDS"
)

// TestMultiProcess: processes sharing one file, each incrementing one counter by reading it and
// patching it on condition that it still holds what was read (as the Elector renews a lease),
// lose no update: the counter ends at processes × rounds. The processes also open the file and
// create the table and the document at the same moment.
func TestMultiProcess(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	const processes, rounds = 4, 100
	raw := fileURL(t, "")
	cmds := make([]*exec.Cmd, processes)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMultiProcessChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), childURLEnv+"="+raw, childRoundsEnv+"="+strconv.Itoa(rounds))
		cmds[i] = cmd
	}
	outs := make([][]byte, processes)
	errs := make([]error, processes)
	done := make(chan int)
	for i, cmd := range cmds {
		go func() {
			outs[i], errs[i] = cmd.CombinedOutput()
			done <- i
		}()
	}
	for range cmds {
		i := <-done
		if errs[i] != nil {
			t.Errorf("process %d: %v\n%s", i, errs[i], outs[i])
		} else {
			t.Logf("process %d: %s", i, outs[i])
		}
	}
	s, err := Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	doc, err := s.Get(t.Context(), "counter")
	if err != nil {
		t.Fatal(err)
	}
	if doc["n"] != float64(processes*rounds) {
		t.Errorf("counter = %v after %d processes × %d increments, want %d: updates were lost (T2)", doc["n"], processes, rounds, processes*rounds)
	}
}

// TestMultiProcessChild is the child's part of TestMultiProcess; it does nothing when run
// directly.
func TestMultiProcessChild(t *testing.T) {
	raw := os.Getenv(childURLEnv)
	if raw == "" {
		t.Skip("run by TestMultiProcess")
	}
	rounds, err := strconv.Atoi(os.Getenv(childRoundsEnv))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	if err := s.Create(ctx, "counter", map[string]any{"n": 0}); err != nil && !errors.Is(err, store.ErrExists) {
		t.Fatal(err)
	}
	conflicts := 0
	for done := 0; done < rounds; {
		doc, err := s.Get(ctx, "counter")
		if err != nil {
			t.Fatal(err)
		}
		n := doc["n"].(float64)
		err = s.Patch(ctx, "counter", map[string]any{"n": n + 1, "by": os.Getpid()}, &store.Condition{Field: "n", Value: n})
		switch {
		case err == nil:
			done++
		case errors.Is(err, store.ErrConditionFailed):
			conflicts++
		default:
			t.Fatal(err)
		}
	}
	fmt.Printf("pid %d: %d increments, %d conflicts\n", os.Getpid(), rounds, conflicts)
}
