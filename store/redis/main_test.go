package redis

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// goredisLogs keeps everything go-redis logs during the tests, so that tests can check that no
// credential is ever logged (T4). The logger is set once, before any test runs, because go-redis
// reads it from a global without synchronization.
var goredisLogs = &logBuffer{}

type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Printf(_ context.Context, format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	fmt.Fprintln(os.Stderr, "redis:", msg)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(msg + "\n")
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestMain(m *testing.M) {
	goredis.SetLogger(goredisLogs)
	code := m.Run()
	if strings.Contains(goredisLogs.String(), "hunter2secret") {
		fmt.Fprintln(os.Stderr, "FAIL: go-redis logged a test password (T4)")
		code = 1
	}
	os.Exit(code)
}

func captureLogs(testing.TB) *logBuffer { return goredisLogs }
