package tlstest

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// AwaitReady reads the log of a test server from r until a line for which ready is true, then
// goes on reading it into nothing in the background: a server whose log pipe is full blocks. It
// returns the log read so far, and an error when the log ended first or timeout passed.
func AwaitReady(r io.Reader, name string, timeout time.Duration, ready func(line string) bool) (string, error) {
	var (
		mu   sync.Mutex
		logs strings.Builder
	)
	snapshot := func() string {
		mu.Lock()
		defer mu.Unlock()
		return logs.String()
	}
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			logs.WriteString(line + "\n")
			mu.Unlock()
			if ready(line) {
				done <- nil
				io.Copy(io.Discard, r)
				return
			}
		}
		done <- fmt.Errorf("%s exited before it was ready: %v", name, sc.Err())
	}()
	select {
	case err := <-done:
		return snapshot(), err
	case <-time.After(timeout):
		return snapshot(), fmt.Errorf("%s not ready after %v", name, timeout)
	}
}
