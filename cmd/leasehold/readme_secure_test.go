package main

import (
	"context"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/testcerts"
	"github.com/leasehold/leasehold/store"
)

// secureConnectionsSection returns the "## Secure connections" section of docs/backends.md,
// up to the next heading of its level or above.
func secureConnectionsSection(t *testing.T) string {
	t.Helper()
	return docSection(t, "docs/backends.md", "## Secure connections\n")
}

// fencedBlock returns the content of the first block of sec fenced as lang.
func fencedBlock(t *testing.T, sec, lang string) string {
	t.Helper()
	m := regexp.MustCompile("(?s)\n```" + lang + "\n(.*?)\n```\n").FindStringSubmatch(sec)
	if m == nil {
		t.Fatalf("the Secure connections section of docs/backends.md has no %s block", lang)
	}
	return m[1]
}

// TestConfigREADMESecureConnections: the URLs the "Secure connections" section of
// docs/backends.md shows, one per backend, are taken as they are by their backends: with their
// files replaced by real ones (certificates, a password file, a credentials file) and their
// hosts by a closed port, each fails to connect, and not for a parameter. The section's JSON configuration decodes as
// the command's --config does.
func TestConfigREADMESecureConnections(t *testing.T) {
	sec := secureConnectionsSection(t)
	certs := testcerts.New(t)
	files := map[string]string{
		"ca": certs.CA, "cert": certs.ClientCert, "key": certs.ClientKey,
		"sslrootcert": certs.CA, "sslcert": certs.ClientCert, "sslkey": certs.ClientKey,
		"password_file": certs.Write(t, "password", []byte("readme-pw-5d0c\n")),
		// What checkCreds of store/nats looks for: the client reads the rest when it
		// connects, which it never does here.
		"creds": certs.Write(t, "leasehold.creds", []byte("-----BEGIN NATS USER JWT-----\neyJ0eXAiOiJKV1QifQ\n------END NATS USER JWT------\n")),
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()

	var schemes []string
	for _, raw := range strings.Split(fencedBlock(t, sec, "sh"), "\n") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Errorf("docs/backends.md URL %s: %v", raw, err)
			continue
		}
		schemes = append(schemes, u.Scheme)
		t.Run(u.Scheme, func(t *testing.T) {
			if !slices.Contains(store.Schemes(), u.Scheme) {
				t.Skipf("this build has no backend for %s:// (known: %v)", u.Scheme, store.Schemes())
			}
			q := u.Query()
			for name, vs := range q {
				if !strings.HasPrefix(vs[0], "/") {
					continue
				}
				f, ok := files[name]
				if !ok {
					t.Fatalf("docs/backends.md URL %s: parameter %q names the file %s, which this test has none for: add one", raw, name, vs[0])
				}
				q.Set(name, f)
			}
			u.RawQuery = q.Encode()
			u.Host = closed
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			s, err := store.Open(ctx, u.String())
			if err == nil {
				store.Close(s)
				t.Fatalf("Open(%s) succeeded on a closed port", store.Redact(u))
			}
			msg := err.Error()
			t.Log(msg)
			if strings.Contains(msg, "parameter") || strings.Contains(msg, "unknown") {
				t.Errorf("docs/backends.md URL %s: the error is about a parameter, want one about connecting: %s", raw, msg)
			}
			if !strings.Contains(msg, "refused") && !strings.Contains(msg, "deadline") && !strings.Contains(msg, "no servers available") {
				t.Errorf("docs/backends.md URL %s: the error is not about connecting: %s", raw, msg)
			}
		})
	}
	slices.Sort(schemes)
	if want := []string{"etcd", "mysql", "nats", "postgres", "rediss"}; !slices.Equal(schemes, want) {
		t.Errorf("the Secure connections section's URLs have the schemes %v, want one per networked backend: %v", schemes, want)
	}

	cfg, err := leasehold.ParseConfig([]byte(fencedBlock(t, sec, "json")))
	if err != nil {
		t.Fatalf("the Secure connections section's configuration: %v", err)
	}
	if _, err := leasehold.New(cfg); err != nil {
		t.Errorf("the Secure connections section's configuration does not decode: %v", err)
	}
}
