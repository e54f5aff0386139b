package nats

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// TestOpenRetriesUnansweredRequest: a JetStream API request of Open that gets no answer is
// tried again after dial_timeout, instead of holding Open until its context ends. The server
// drops Open's first request for the bucket's stream (the user may not publish to
// $JS.API.STREAM.INFO.>, a publish violation the client is told of only asynchronously, its
// request left without a reply), then the permission is lifted: the next attempt is answered.
// Open used to wait for its whole context and fail with its deadline.
func TestOpenRetriesUnansweredRequest(t *testing.T) {
	t.Parallel()
	srv, opts, dropped := streamInfoDropper(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	raw := fmt.Sprintf("nats://app:secret@%s?bucket=b&storage=memory&dial_timeout=300ms", srv.Addr())
	type result struct {
		s   *Store
		err error
	}
	opened := make(chan result, 1)
	go func() {
		s, err := Open(ctx, raw)
		opened <- result{s, err}
	}()
	select {
	case <-dropped:
	case r := <-opened:
		t.Fatalf("Open returned before the server dropped a request of it (%v): the test drops nothing", r.err)
	}
	lifted := opts.Clone()
	lifted.Users = appUser()
	if err := srv.ReloadOptions(lifted); err != nil {
		t.Fatal(err)
	}
	r := <-opened
	if r.err != nil {
		t.Fatalf("Open with its first request for the stream unanswered: %v", r.err)
	}
	defer r.s.Close()
	if err := r.s.Create(ctx, "k", map[string]any{"v": 1}); err != nil {
		t.Fatal(err)
	}
	doc, err := r.s.Get(ctx, "k")
	if err != nil || doc["v"] != float64(1) {
		t.Errorf("Get = %v, %v; want the document created", doc, err)
	}
}

// TestOpenUnansweredUntilItsContextEnds: when no attempt is answered, Open fails when its
// context ends, with an error that names the bucket, counts the attempts and wraps the
// context's.
func TestOpenUnansweredUntilItsContextEnds(t *testing.T) {
	t.Parallel()
	srv, _, _ := streamInfoDropper(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	_, err := Open(ctx, fmt.Sprintf("nats://app:secret@%s?bucket=b&storage=memory&dial_timeout=200ms", srv.Addr()))
	t.Logf("error: %v", err)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `bucket "b"`) ||
		!strings.Contains(err.Error(), "no answer from JetStream to") {
		t.Errorf("Open whose requests are never answered: %v, want an error naming the bucket, counting the attempts and wrapping context.DeadlineExceeded", err)
	}
}

// streamInfoDropper starts a server with JetStream whose user app (password secret) may not
// publish to $JS.API.STREAM.INFO.>: it drops those requests, and signals dropped when it does.
// Reloading opts with appUser() lifts the restriction.
func streamInfoDropper(t *testing.T) (*server.Server, *server.Options, <-chan struct{}) {
	t.Helper()
	opts := &server.Options{JetStream: true, Users: appUser("$JS.API.STREAM.INFO.>")}
	srv := startServer(t, opts)
	dropped := make(chan struct{}, 1)
	srv.SetLoggerV2(violationLogger{subject: "$JS.API.STREAM.INFO.", seen: dropped}, false, false, false)
	return srv, opts, dropped
}

// appUser is the user app, which may not publish to the subjects deny.
func appUser(deny ...string) []*server.User {
	u := &server.User{Username: "app", Password: "secret"}
	if len(deny) > 0 {
		u.Permissions = &server.Permissions{Publish: &server.SubjectPermission{Deny: deny}}
	}
	return []*server.User{u}
}

// violationLogger signals seen when the server logs a publish violation on a subject starting
// with subject, the request it dropped.
type violationLogger struct {
	subject string
	seen    chan<- struct{}
}

func (l violationLogger) Errorf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if strings.Contains(msg, "Publish Violation") && strings.Contains(msg, l.subject) {
		select {
		case l.seen <- struct{}{}:
		default:
		}
	}
}

func (violationLogger) Noticef(string, ...any) {}
func (violationLogger) Warnf(string, ...any)   {}
func (violationLogger) Fatalf(string, ...any)  {}
func (violationLogger) Debugf(string, ...any)  {}
func (violationLogger) Tracef(string, ...any)  {}
