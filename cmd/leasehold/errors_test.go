//go:build unix

package main

import (
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testcerts"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/internal/tlstest"
)

// An error whose text says nothing by itself gets its likely cause: EOF from a plain redis://
// URL (a server that expects TLS closed the connection), a NATS client's exceeded buffer or no
// servers (the server is unreachable). Errors that say something are left alone.
func TestExplain(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"store: open redis://127.0.0.1:6380/0: store/redis: ping 127.0.0.1:6380: EOF", "it may expect TLS; use rediss:// or the URL parameter tls=true"},
		{"lease \"jobs\" in nats://127.0.0.1:4222: store/nats: get: nats: outbound buffer limit exceeded", "the NATS server is unreachable"},
		{"store/nats: connect to 127.0.0.1:1: nats: no servers available for connection", "the NATS server is unreachable"},
	} {
		if got := explain(tc.in); !strings.HasPrefix(got, tc.in+" (") || !strings.Contains(got, tc.want) {
			t.Errorf("explain(%q) = %q; want it followed by the cause %q", tc.in, got, tc.want)
		}
	}
	for _, in := range []string{
		"store: open rediss://127.0.0.1:6380/0: store/redis: ping 127.0.0.1:6380: EOF",                                                  // TLS already
		"store: open postgres://127.0.0.1:5432/x: EOF",                                                                                  // not Redis
		"store: open redis://127.0.0.1:1/0: store/redis: ping: connection refused",                                                      // says it
		"store/nats: not connected to the server (reconnecting): nats: outbound buffer limit exceeded (the NATS server is unreachable)", // explained already
	} {
		if got := explain(in); got != in {
			t.Errorf("explain(%q) = %q; want it unchanged", in, got)
		}
	}
}

// A plain redis:// URL to a Redis server that serves TLS only: the server closes the
// connection and the client says only EOF; the command says the server may expect TLS, on one
// line (exit 1); run --try gives up on it (exit 1), its giving-up line saying the same.
func TestRedisPlainURLOnTLSPort(t *testing.T) {
	bin := testenv.Binary(t, "redis-server", "/usr/bin/redis-server")
	certs := testcerts.New(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--port", "0", "--tls-port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--tls-cert-file", certs.ServerCert, "--tls-key-file", certs.ServerKey, "--tls-ca-cert-file", certs.CA,
		"--tls-auth-clients", "no", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if log, err := tlstest.AwaitReady(out, "redis-server", 30*time.Second, func(line string) bool {
		return strings.Contains(line, "Ready to accept connections")
	}); err != nil {
		if strings.Contains(log, "tls-port") {
			testenv.Unavailable(t, "redis-server without TLS support:\n"+log)
		}
		t.Fatalf("%v:\n%s", err, log)
	}
	url := "redis://127.0.0.1:" + strconv.Itoa(port) + "/0"
	for _, args := range [][]string{
		{"status", "--store", url},
		{"run", "--try", "--store", url, "--", "true"},
	} {
		stdout, stderr, code := runLeasehold(t, args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		last := lines[len(lines)-1]
		if args[0] == "run" {
			// run waits for a store that does not answer (C7): --try gives up, saying why.
			for _, l := range lines {
				if strings.Contains(l, "giving up") {
					last = l
				}
			}
		}
		if code != exitFailure || !strings.Contains(last, "EOF") || !strings.Contains(last, "may expect TLS") || !strings.Contains(last, "rediss://") || stdout != "" {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit 1, its last line saying EOF and that the server may expect TLS (rediss://)", args[0], code, stderr)
		}
		if args[0] == "status" && len(lines) != 1 {
			t.Errorf("status: %d lines on stderr, want 1:\n%s", len(lines), stderr)
		}
	}
}

// A NATS server that is down: the client says it has no servers available (or, once
// connected, that its outbound buffer is exceeded); the command says the server is unreachable,
// on one line (exit 1); run --try gives up on it (C7), its giving-up line saying the same.
func TestNATSDownSaysUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	for _, args := range [][]string{
		{"status", "--store", "nats://" + addr},
		{"run", "--try", "--store", "nats://" + addr, "--", "true"},
	} {
		stdout, stderr, code := runLeasehold(t, args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if args[0] == "run" {
			// run waits for a store that does not answer (C7): --try gives up at once, its
			// giving-up line saying why.
			for _, l := range lines {
				if strings.Contains(l, "giving up") {
					lines = []string{l}
				}
			}
		}
		if code != exitFailure || len(lines) != 1 || !strings.Contains(lines[0], "the NATS server is unreachable") || stdout != "" {
			t.Errorf("%s over a NATS server that is down: exit %d, stderr:\n%s\nwant exit 1 and one line saying the server is unreachable", args[0], code, stderr)
		}
	}
}
