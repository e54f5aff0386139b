package redis

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/foreigndoc"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// TestNotJSON checks that a key holding something this store did not write is an error naming
// the key, for every operation, and is left as it is.
func TestNotJSON(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	for i, raw := range []string{"not json", "[1,2]", "null", `"text"`, `{"a":1} trailing`, `{"a":}`, "42"} {
		key := fmt.Sprintf("bad:%d", i)
		if err := s.Client().Set(t.Context(), s.Prefix()+key, raw, 0).Err(); err != nil {
			t.Fatal(err)
		}
		foreigndoc.Value(t, s, key, raw, ErrNotJSON)
		if got, err := s.Client().Get(t.Context(), s.Prefix()+key).Result(); err != nil || got != raw {
			t.Errorf("%q holding %q now holds %q (%v)", key, raw, got, err)
		}
	}
}

// TestWrongType checks that a key holding another Redis type is an error, not a crash.
func TestWrongType(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	if err := s.Client().HSet(t.Context(), s.Prefix()+"h", "a", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(t.Context(), "h"); err == nil || !strings.Contains(err.Error(), `"h"`) {
		t.Errorf("Get of a hash: %v", err)
	}
	if err := s.Patch(t.Context(), "h", map[string]any{"a": 2}, nil); err == nil || !strings.Contains(err.Error(), `"h"`) {
		t.Errorf("Patch of a hash: %v", err)
	}
}

// TestUnreachable checks that Open fails promptly on a closed port, naming the URL without its
// password (T4).
func TestUnreachable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := store.Open(ctx, "redis://user:hunter2secret@"+testenv.ClosedPort(t)+"/0")
	if err == nil {
		t.Fatal("Open on a closed port succeeded")
	}
	if strings.Contains(err.Error(), "hunter2secret") {
		t.Errorf("T4: the error shows the password: %v", err)
	}
	if !strings.Contains(err.Error(), "xxxxx@127.0.0.1") {
		t.Errorf("the error does not name the server: %v", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("Open on a closed port took %v", d)
	}
}

// TestCredentialsNotShown opens the real server with a user it does not know (its default user
// takes any password, so the user must be unknown for the handshake to fail): the error must not
// show the password, nor may anything go-redis logs (T4).
func TestCredentialsNotShown(t *testing.T) {
	logs := captureLogs(t)
	u, err := url.Parse(testenv.Redis.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, protocol := range []string{"2", "3"} {
		u.User = url.UserPassword("nosuchuser", "pw-hunter2secret")
		u.RawQuery = "protocol=" + protocol
		_, err := store.Open(t.Context(), u.String())
		if err == nil {
			t.Fatalf("Open with credentials the server does not know succeeded")
		}
		if strings.Contains(err.Error(), "hunter2secret") {
			t.Errorf("T4: the error shows the password: %v", err)
		}
		if !errors.Is(err, store.ErrConfig) {
			t.Errorf("C7: refused credentials are not a configuration error (store.ErrConfig): %v", err)
		}
		t.Logf("error: %v", err)
		svc, err := leasehold.NewURLStore(ServiceType)
		if err != nil {
			t.Fatal(err)
		}
		svc.URL = u.String()
		if err := svc.Init(t.Context(), nil); err == nil || strings.Contains(err.Error(), "hunter2secret") {
			t.Errorf("T4: the service's Init: %v", err)
		}
	}
	if strings.Contains(logs.String(), "hunter2secret") {
		t.Errorf("T4: go-redis logged the password: %s", logs.String())
	}
}

// TestBadURL checks the errors for malformed URLs and unknown parameters: they name the problem
// and never the password.
func TestBadURL(t *testing.T) {
	t.Parallel()
	storetest.BadURLs(t, "hunter2secret", map[string]string{
		"redis://:pw-hunter2secret@127.0.0.1:6379/0?bogus=1":           `unknown URL parameter "bogus" (known: prefix, `,
		"redis://:pw-hunter2secret@127.0.0.1:6379/notanumber":          "database",
		"redis://:pw-hunter2secret@127.0.0.1:6379/0?dial_timeout=soon": "dial_timeout",
		"redis://:pw-hunter2secret@127.0.0.1:6379/0?max_retries=3":     "max_retries",
		// Several hosts: Sentinel and Redis Cluster have their own schemes.
		"redis://:pw-hunter2secret@127.0.0.1:6379,127.0.0.1:6380/0": "for Redis Cluster some of its nodes with redis+cluster://",
		// Redis Cluster URLs.
		"redis+cluster://:pw-hunter2secret@127.0.0.1:7000,,127.0.0.1:7001":               "empty host",
		"redis+cluster://:pw-hunter2secret@127.0.0.1:7000,127.0.0.1:70000":               `cluster node "127.0.0.1:70000" is not host:port`,
		"redis+cluster://:pw-hunter2secret@127.0.0.1:7000/1":                             `names database "1": Redis Cluster has database 0 only`,
		"redis+cluster://:pw-hunter2secret@127.0.0.1:7000?db=2":                          `"db": Redis Cluster has database 0 only`,
		"redis+cluster://:pw-hunter2secret@127.0.0.1:7000?bogus=1":                       `unknown URL parameter "bogus" (known: prefix, `,
		"redis+cluster://:pw-hunter2secret@127.0.0.1:7000?max_retries=2":                 "max_retries",
		"redis+cluster://:pw-hunter2secret@127.0.0.1:7000?wait_timeout=100ms":            `"wait_timeout" without "wait_replicas"`,
		"rediss+cluster://:pw-hunter2secret@127.0.0.1:7000?tls=false":                    `"tls" is false`,
		"redis+cluster://:pw-hunter2secret@127.0.0.1:7000?password_file=/nonexistent/pw": `"password_file"`,
		"redis+cluster://:pw-hunter2secret@127.0.0.1:7000?master=m":                      `unknown URL parameter "master"`,
		// WAIT after each write.
		"redis://:pw-hunter2secret@127.0.0.1:6379/0?wait_replicas=-1":                                                   `"wait_replicas"`,
		"redis://:pw-hunter2secret@127.0.0.1:6379/0?wait_replicas=one":                                                  `"wait_replicas"`,
		"redis://:pw-hunter2secret@127.0.0.1:6379/0?wait_timeout=100ms":                                                 `"wait_timeout" without "wait_replicas"`,
		"redis://:pw-hunter2secret@127.0.0.1:6379/0?wait_replicas=1&wait_timeout=0":                                     `"wait_timeout"`,
		"redis://:pw-hunter2secret@127.0.0.1:6379/0?wait_replicas=1&wait_timeout=100":                                   `"wait_timeout"`,
		"redis://:pw-hunter2secret@127.0.0.1:6379/0?wait_replicas=1&wait_timeout=500us":                                 `"wait_timeout"`,
		"redis://:pw-hunter2secret@127.0.0.1:6379/0?wait_replicas=1&wait_timeout=5s":                                    `"wait_timeout" (5s) is not shorter than read_timeout`,
		"redis+sentinel://:pw-hunter2secret@127.0.0.1:26379/0?master=m&wait_replicas=1&wait_timeout=2s&read_timeout=1s": "is not shorter than read_timeout (1s)",
		// Sentinel URLs.
		"redis+sentinel://:pw-hunter2secret@127.0.0.1:26379/0":                                                 `"master" is missing`,
		"redis+sentinel://:pw-hunter2secret@127.0.0.1:26379/0?master=":                                         `"master" is missing`,
		"redis+sentinel://:pw-hunter2secret@127.0.0.1:26379/0?master=m&bogus=1":                                `unknown URL parameter "bogus" (known: prefix, `,
		"redis+sentinel://:pw-hunter2secret@127.0.0.1:26379/0?master=m&addr=h:1":                               `unknown URL parameter "addr"`,
		"redis+sentinel://:pw-hunter2secret@127.0.0.1:26379/0?master=m&sentinel_user=u":                        `"sentinel_user" needs "sentinel_password_file"`,
		"redis+sentinel://:pw-hunter2secret@127.0.0.1:26379/0?master=m&sentinel_password_file=/nonexistent/pw": `"sentinel_password_file"`,
		"redis+sentinel://:pw-hunter2secret@127.0.0.1:26379,,127.0.0.1:26380/0?master=m":                       "empty host",
		"redis+sentinel://:pw-hunter2secret@127.0.0.1:26379/notanumber?master=m":                               "database",
		"redis+sentinel://:pw-hunter2secret@127.0.0.1:26379/0?master=m&max_retries=2":                          "max_retries",
		"redis+sentinel://:pw-hunter2secret@127.0.0.1:26379/0?master=m&tls=false&ca=/x":                        `"tls" is false`,
		"rediss+sentinel://:pw-hunter2secret@127.0.0.1:26379/0?master=m&tls=false":                             `"tls" is false`,
		"redis+sentinel://:pw-hunter2secret@127.0.0.1:26379/0?master=m&ca=/nonexistent/ca.pem":                 `"ca"`,
		"redis+sentinel://:pw-hunter2secret@127.0.0.1:26379/0?master=m&password_file=/nonexistent/pw":          `"password_file"`,
	}, func(ctx context.Context, raw string) (store.Store, error) { return Open(ctx, raw) })
}

// Every parameter this package leaves to go-redis is one go-redis takes: the list that names the
// known parameters in errors stays true of the go-redis version in go.mod. The Sentinel URL
// takes them all too.
func TestGoRedisParamsKnownToGoRedis(t *testing.T) {
	for _, p := range goRedisParams {
		for _, schemes := range [][]string{{"redis", "rediss"}, {sentinelScheme, sentinelTLSScheme}} {
			ok := false
			for _, scheme := range schemes { // skip_verify goes with TLS
				for _, v := range []string{"1", "1s", "true", "x"} {
					q := p + "=" + v
					if strings.HasSuffix(scheme, "sentinel") {
						q += "&master=m"
					}
					if _, err := parseURL(&url.URL{Scheme: scheme, Host: "127.0.0.1:6379", Path: "/0", RawQuery: q}); err == nil {
						ok = true
					}
				}
			}
			if !ok {
				t.Errorf("%v: the parameter %q is refused with every value tried", schemes, p)
			}
		}
	}
}

// TestSentinelURL checks what a Sentinel URL becomes: the Sentinels (port 26379 by default),
// the master's name, the servers' and the Sentinels' credentials, go-redis's parameters, TLS
// checked against each server's own name, the replicas to wait for.
func TestSentinelURL(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "sentinel-pw")
	if err := os.WriteFile(pw, []byte("s3ntinel-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse("rediss+sentinel://app:data-pw@s2,s1:26380,127.0.0.1:26381/3?master=mymaster&sentinel_user=sen&sentinel_password_file=" + pw +
		"&prefix=p:&dial_timeout=2s&wait_replicas=1&wait_timeout=100ms")
	if err != nil {
		t.Fatal(err)
	}
	set, err := parseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	f := set.failover
	if f == nil || set.opts != nil {
		t.Fatalf("not a failover client's options: %+v", set)
	}
	if want := []string{"s2:26379", "s1:26380", "127.0.0.1:26381"}; !slices.Equal(f.SentinelAddrs, want) {
		t.Errorf("Sentinels %v, want %v", f.SentinelAddrs, want)
	}
	if f.MasterName != "mymaster" || f.DB != 3 || f.Username != "app" || f.Password != "data-pw" ||
		f.SentinelUsername != "sen" || f.SentinelPassword != "s3ntinel-secret" || f.DialTimeout != 2*time.Second {
		t.Errorf("options %+v", f)
	}
	if f.MaxRetries != -1 || !f.ContextTimeoutEnabled {
		t.Errorf("retries %d, context timeouts %v: want none, and on", f.MaxRetries, f.ContextTimeoutEnabled)
	}
	if f.TLSConfig == nil || f.TLSConfig.ServerName != "" {
		t.Errorf("TLS %+v: want TLS, each server checked for its own name", f.TLSConfig)
	}
	if set.prefix != "p:" || set.wait != (waitRule{1, 100 * time.Millisecond}) {
		t.Errorf("prefix %q, wait %+v", set.prefix, set.wait)
	}
	set, err = parseURL(&url.URL{Scheme: "redis", Host: "h:6379", RawQuery: "wait_replicas=2"})
	if err != nil || set.wait != (waitRule{2, defaultWaitTimeout}) {
		t.Errorf("wait_replicas alone: %+v, %v", set, err)
	}
}
