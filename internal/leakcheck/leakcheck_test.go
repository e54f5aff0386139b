package leakcheck

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that keeps what Errorf reports instead of failing the test.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Helper() {}

func parkedHere(stop chan struct{}) { <-stop }

func TestFindsLabelledGoroutinesOnly(t *testing.T) {
	tr, other := New(), New()
	stop, started := make(chan struct{}), make(chan struct{})
	defer close(stop)
	tr.Do(func() {
		go func() {
			// A grandchild carries the label too.
			go parkedHere(stop)
			close(started)
			parkedHere(stop)
		}()
	})
	go parkedHere(stop) // unlabelled
	<-started
	if got := tr.Running(); len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), "parkedHere") {
		t.Fatalf("Running() = %q, want the labelled goroutines", got)
	}
	if got := other.Running(); len(got) != 0 {
		t.Errorf("another tracker sees %q", got)
	}
	r := &recorder{TB: t}
	tr.Check(r, 30*time.Millisecond)
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "parkedHere") {
		t.Errorf("Check on running goroutines reported %q, want their stacks", r.errors)
	}
}

func TestCheckWaitsForExit(t *testing.T) {
	tr := New()
	stop := make(chan struct{})
	tr.Do(func() { go parkedHere(stop) })
	close(stop)
	r := &recorder{TB: t}
	tr.Check(r, 5*time.Second)
	if len(r.errors) != 0 {
		t.Errorf("Check after the goroutine ended: %q", r.errors)
	}
}
