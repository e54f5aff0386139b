// Package testenv tells tests where the project's real servers are and what to do when one
// cannot be reached: skip with a message saying how to start it, or fail when
// LEASEHOLD_REQUIRE_SERVERS=1 (as .ci/run sets), so CI never skips a server test.
package testenv

import (
	"net"
	"os"
	"testing"
	"time"
)

// Server names a server the tests use.
type Server struct {
	Name       string // e.g. "PostgreSQL"
	EnvVar     string // variable holding its URL, e.g. LEASEHOLD_POSTGRES_URL
	DefaultURL string // URL used when EnvVar is unset
	Addr       string // host:port dialled to check reachability when EnvVar is unset
}

var (
	Postgres = Server{"PostgreSQL", "LEASEHOLD_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "127.0.0.1:5432"}
	MySQL    = Server{"MariaDB/MySQL", "LEASEHOLD_MYSQL_URL", "mysql://root@127.0.0.1:3306/test", "127.0.0.1:3306"}
	Redis    = Server{"Redis", "LEASEHOLD_REDIS_URL", "redis://127.0.0.1:6379/0", "127.0.0.1:6379"}
	NATS     = Server{"NATS", "LEASEHOLD_NATS_URL", "nats://127.0.0.1:4222", "127.0.0.1:4222"}
)

// Required reports whether unreachable servers must fail the tests instead of skipping them.
func Required() bool { return os.Getenv("LEASEHOLD_REQUIRE_SERVERS") == "1" }

// URL returns the server's URL, skipping the test (or failing it when Required) if the server
// does not accept TCP connections.
func (s Server) URL(t testing.TB) string {
	t.Helper()
	url := s.DefaultURL
	addr := s.Addr
	if v := os.Getenv(s.EnvVar); v != "" {
		url = v
		addr = ""
	}
	if addr != "" {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			msg := s.Name + " is not reachable at " + addr + " (" + err.Error() + "); start it with scripts/services, or set " + s.EnvVar
			if Required() {
				t.Fatal(msg + " [LEASEHOLD_REQUIRE_SERVERS=1]")
			}
			t.Skip(msg)
		}
		c.Close()
	}
	return url
}

// Binary returns path, the server program a test starts itself (nats-server, redis-server,
// mariadbd), or skips the test naming it when it is not there, and fails it instead when
// Required.
func Binary(t testing.TB, name, path string) string {
	t.Helper()
	if fi, err := os.Stat(path); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		msg := name + " is not installed at " + path + "; install it with scripts/services"
		if err != nil {
			msg += " (" + err.Error() + ")"
		}
		if Required() {
			t.Fatal(msg + " [LEASEHOLD_REQUIRE_SERVERS=1]")
		}
		t.Skip(msg)
	}
	return path
}

// Unavailable skips the test with why, or fails it when Required: for a server that is
// installed but cannot serve what the test needs (a build without TLS, say).
func Unavailable(t testing.TB, why string) {
	t.Helper()
	if Required() {
		t.Fatal(why + " [LEASEHOLD_REQUIRE_SERVERS=1]")
	}
	t.Skip(why)
}
