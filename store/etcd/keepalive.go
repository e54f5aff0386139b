package etcd

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc/grpclog"
)

// minKeepalive is the shortest keepalive interval the gRPC client uses: it raises a shorter
// one to it (logging a warning). etcd servers refuse pings closer together than their
// --grpc-keepalive-min-time (5s by default) with a GOAWAY "too_many_pings", so 10s is also
// safely above what they enforce.
const minKeepalive = 10 * time.Second

// How keepalive is set up (docs/design.md, N3). An etcd server accepts keepalive pings only
// while the connection has a call in flight: it does not permit pings without a stream
// (PermitWithoutStream is false in its enforcement policy, whatever its flags), and it answers
// a client that pings an idle connection more than twice within two hours with a GOAWAY
// "too_many_pings", closing the connection. So the client pings only while a call is pending
// (PermitWithoutStream false), at most every keepalive (10s by default, no less); a call that
// meets a dead connection then fails once a ping has gone unanswered for keepalive_timeout,
// and the next one dials again, instead of every call waiting out its deadline on it.

// checkKeepalive refuses a keepalive interval the gRPC client would not use as given.
func checkKeepalive(d time.Duration) error {
	if d != 0 && d < minKeepalive {
		return fmt.Errorf("store/etcd: URL parameter \"keepalive\": %v is less than %v, the shortest interval the gRPC client pings at (\"0\" disables keepalive)", d, minKeepalive)
	}
	return nil
}

func init() {
	// The gRPC library's logger is global; its default one writes to stderr. Route it to
	// log/slog (the program's default logger at the moment of each line), so that a program
	// (the leasehold command) formats and filters it with its own lines. A program that sets
	// its own gRPC logger after this package's init replaces this one.
	grpclog.SetLoggerV2(grpcLogger{})
}

// grpcLogger is a grpclog.LoggerV2 writing to slog.Default(). gRPC's informational lines and
// warnings (connecting, reconnecting, a connection closed) go to debug level: the store
// reports what they mean to its callers, as errors. Its errors go to warning level.
type grpcLogger struct{}

func (grpcLogger) log(level slog.Level, msg string) {
	slog.Default().Log(context.Background(), level, "etcd client: gRPC: "+strings.TrimSpace(msg))
}

func (l grpcLogger) Info(args ...any)   { l.log(slog.LevelDebug, fmt.Sprint(args...)) }
func (l grpcLogger) Infoln(args ...any) { l.log(slog.LevelDebug, fmt.Sprintln(args...)) }
func (l grpcLogger) Infof(format string, args ...any) {
	l.log(slog.LevelDebug, fmt.Sprintf(format, args...))
}
func (l grpcLogger) Warning(args ...any)   { l.log(slog.LevelDebug, fmt.Sprint(args...)) }
func (l grpcLogger) Warningln(args ...any) { l.log(slog.LevelDebug, fmt.Sprintln(args...)) }
func (l grpcLogger) Warningf(format string, args ...any) {
	l.log(slog.LevelDebug, fmt.Sprintf(format, args...))
}
func (l grpcLogger) Error(args ...any)   { l.log(slog.LevelWarn, fmt.Sprint(args...)) }
func (l grpcLogger) Errorln(args ...any) { l.log(slog.LevelWarn, fmt.Sprintln(args...)) }
func (l grpcLogger) Errorf(format string, args ...any) {
	l.log(slog.LevelWarn, fmt.Sprintf(format, args...))
}
func (l grpcLogger) Fatal(args ...any)   { l.log(slog.LevelError, fmt.Sprint(args...)); os.Exit(1) }
func (l grpcLogger) Fatalln(args ...any) { l.log(slog.LevelError, fmt.Sprintln(args...)); os.Exit(1) }
func (l grpcLogger) Fatalf(format string, args ...any) {
	l.log(slog.LevelError, fmt.Sprintf(format, args...))
	os.Exit(1)
}

// V reports whether verbose lines of level v are wanted: only gRPC's least verbose ones, and
// only when the default logger writes debug lines.
func (grpcLogger) V(v int) bool {
	return v <= 0 && slog.Default().Enabled(context.Background(), slog.LevelDebug)
}
