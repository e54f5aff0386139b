package nats

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/leasehold/leasehold/internal/testcerts"
	"github.com/leasehold/leasehold/internal/testenv"
)

const natsServerBin = "/usr/sbin/nats-server"

// tlsNATS is a nats-server process with JetStream, requiring TLS with a client certificate
// signed by certs.CA, and one of two users: an nkey user, and "app" with password
// natsAppPassword.
type tlsNATS struct {
	addr     string
	certs    *testcerts.Set
	nkeyFile string // the nkey user's private key file
}

const natsAppPassword = "nats-app-pw-93f2"

func startTLSNATS(t *testing.T) *tlsNATS {
	t.Helper()
	bin := testenv.Binary(t, "nats-server", natsServerBin)
	certs := testcerts.New(t)
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	priv, err := kp.Seed()
	if err != nil {
		t.Fatal(err)
	}
	nkeyFile := certs.Write(t, "user.nk", append(priv, '\n'))
	dir := t.TempDir()
	conf := fmt.Sprintf(`listen: "127.0.0.1:-1"
jetstream { store_dir: %q }
tls {
  cert_file: %q
  key_file: %q
  ca_file: %q
  verify: true
  timeout: 5
}
authorization {
  users: [
    { nkey: %q }
    { user: "app", password: %q }
  ]
}
`, filepath.Join(dir, "js"), certs.ServerCert, certs.ServerKey, certs.CA, pub, natsAppPassword)
	confFile := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(confFile, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", confFile)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Wait for the line naming the client port, then for "Server is ready".
	listening := regexp.MustCompile(`Listening for client connections on (127\.0\.0\.1:\d+)`)
	addr, ready := "", make(chan error, 1)
	var logs strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			logs.WriteString(line + "\n")
			if m := listening.FindStringSubmatch(line); m != nil {
				addr = m[1]
			}
			if strings.Contains(line, "Server is ready") {
				ready <- nil
				io.Copy(io.Discard, stderr)
				return
			}
		}
		ready <- fmt.Errorf("nats-server exited before it was ready: %v", sc.Err())
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("%v\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("nats-server not ready after 30s")
	}
	if addr == "" {
		t.Fatal("nats-server did not say its client port")
	}
	return &tlsNATS{addr: addr, certs: certs, nkeyFile: nkeyFile}
}

func (s *tlsNATS) url(user string, kv ...string) string {
	u := url.URL{Scheme: "nats", Host: s.addr}
	if user != "" {
		u.User = url.User(user)
		if name, pw, ok := strings.Cut(user, ":"); ok {
			u.User = url.UserPassword(name, pw)
		}
	}
	q := url.Values{"storage": {"memory"}, "dial_timeout": {"10s"}}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// TestTLS opens stores on a nats-server requiring TLS with client certificates and nkey or
// password authentication (N1, N2).
func TestTLS(t *testing.T) {
	srv := startTLSNATS(t)
	c := srv.certs
	pwFile := c.Write(t, "app-password", []byte(natsAppPassword+"\n"))
	wrongPW := c.Write(t, "wrong-password", []byte("not-the-nats-pw-5120\n"))
	tlsParams := []string{"ca", c.CA, "cert", c.ClientCert, "key", c.ClientKey}

	for i, raw := range []string{
		srv.url("", append(tlsParams, "nkey", srv.nkeyFile, "bucket", "tls_nkey")...),
		srv.url("app", append(tlsParams, "password_file", pwFile, "bucket", "tls_pwfile")...),
		srv.url("app:"+natsAppPassword, append(tlsParams, "bucket", "tls_pw")...),
		srv.url("", append(tlsParams, "nkey", srv.nkeyFile, "bucket", "tls_name", "servername", "localhost")...),
	} {
		s, err := Open(t.Context(), raw)
		if err != nil {
			t.Fatalf("%d: Open: %v", i, err)
		}
		if err := s.Create(t.Context(), "k", map[string]any{"v": float64(i)}); err != nil {
			t.Fatal(err)
		}
		if doc, err := s.Get(t.Context(), "k"); err != nil || doc["v"] != float64(i) {
			t.Fatalf("Get = %v, %v", doc, err)
		}
		s.Close()
	}

	for _, bad := range []struct {
		name  string
		raw   string
		wants []string
	}{
		{"no client certificate", srv.url("", "ca", c.CA, "nkey", srv.nkeyFile), []string{`"cert" and "key"`}},
		{"client certificate of another authority", srv.url("", "ca", c.CA, "cert", c.OtherCert, "key", c.OtherKey, "nkey", srv.nkeyFile), []string{`"cert" and "key"`}},
		{"server of another authority", srv.url("", "ca", c.OtherCA, "cert", c.ClientCert, "key", c.ClientKey, "nkey", srv.nkeyFile), []string{"unknown authority", `URL parameter "ca"`}},
		{"wrong server name", srv.url("", append(tlsParams, "nkey", srv.nkeyFile, "servername", "nats.example")...), []string{"nats.example", `"servername"`}},
		{"no TLS parameters", srv.url("", "nkey", srv.nkeyFile), []string{"certificate"}},
		{"wrong password", srv.url("app", append(tlsParams, "password_file", wrongPW)...), []string{"Authorization Violation"}},
		{"no credentials", srv.url("", tlsParams...), []string{"Authorization Violation"}},
		{"password twice", srv.url("app:x", append(tlsParams, "password_file", pwFile)...), []string{`"password_file"`}},
		{"nkey and password", srv.url("app", append(tlsParams, "password_file", pwFile, "nkey", srv.nkeyFile)...), []string{"credentials given twice"}},
		{"nkey file missing", srv.url("", append(tlsParams, "nkey", filepath.Join(c.Dir, "none.nk"))...), []string{`"nkey"`, "none.nk", "no such file"}},
		{"nkey file of another kind", srv.url("", append(tlsParams, "nkey", c.ClientKey)...), []string{`"nkey"`, c.ClientKey}},
		{"creds file missing", srv.url("", append(tlsParams, "creds", filepath.Join(c.Dir, "none.creds"))...), []string{`"creds"`, "none.creds"}},
		{"creds file of another kind", srv.url("", append(tlsParams, "creds", c.CA)...), []string{`"creds"`, c.CA, "not a NATS credentials file"}},
		{"password file missing", srv.url("app", append(tlsParams, "password_file", filepath.Join(c.Dir, "none"))...), []string{`"password_file"`, "none"}},
	} {
		t.Run(bad.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			s, err := Open(ctx, bad.raw)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			msg := err.Error()
			for _, w := range bad.wants {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			assertNoSecret(t, msg, c, srv.nkeyFile, natsAppPassword, "not-the-nats-pw-5120")
		})
	}
}

// assertNoSecret fails when out holds one of the secrets, a line of a private key, or the
// private nkey.
func assertNoSecret(t *testing.T, out string, c *testcerts.Set, nkeyFile string, secrets ...string) {
	t.Helper()
	nk, err := os.ReadFile(nkeyFile)
	if err != nil {
		t.Fatal(err)
	}
	secrets = append(secrets, strings.TrimSpace(string(nk)))
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("output quotes the secret %q: %s", s, out)
		}
	}
	for _, f := range []string{c.ClientKey, c.OtherKey, c.ServerKey} {
		for _, line := range testcerts.KeyMaterial(t, f) {
			if strings.Contains(out, line) {
				t.Errorf("output quotes the key %s: %s", f, out)
			}
		}
	}
}
