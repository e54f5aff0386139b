package store_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/store"
)

func TestRedact(t *testing.T) {
	for _, c := range []struct {
		url, want string
	}{
		{"postgres://user:s3cret@host:5432/db?sslmode=disable", "postgres://user:xxxxx@host:5432/db?sslmode=disable"},
		{"redis://:s3cret@host:6379/0", "redis://:xxxxx@host:6379/0"},
		{"postgres://user@host/db", "postgres://user@host/db"},
		{"mysql://host/db?password=s3cret&user=u", "mysql://host/db?password=xxxxx&user=u"},
		{"nats://host:4222?token=t", "nats://host:4222?token=xxxxx"},
		{"file:///tmp/a@b.json", "file:///tmp/a@b.json"},
		{"mem://name", "mem://name"},
		{"nosuch://u:1234/x@host/db?a=1", "nosuch://xxxxx@host/db?a=1"},
		{"user:s3cret@host/db", "user:xxxxx@host/db"},
		// A NATS token travels as a user without a password.
		{"nats://s3cretToken@host:4222", "nats://xxxxx@host:4222"},
		// The path of a file holding a secret is not a secret: errors name it.
		{"redis://host:6379/0?password_file=%2Frun%2Fpw&token_file=%2Frun%2Ft", "redis://host:6379/0?password_file=%2Frun%2Fpw&token_file=%2Frun%2Ft"},
		// Nor is the name of an environment variable holding one.
		{"zk://u@host:2181/x?password_env=ZK_PASSWORD", "zk://u@host:2181/x?password_env=ZK_PASSWORD"},
		// A parameter that is a URL with a password of its own.
		{"s3://bucket/p?endpoint=http://u:s3cret@host:9000&region=r", "s3://bucket/p?endpoint=http%3A%2F%2Fu%3Axxxxx%40host%3A9000&region=r"},
		{"s3://bucket/p?endpoint=http://host:9000", "s3://bucket/p?endpoint=http%3A%2F%2Fhost%3A9000"},
	} {
		t.Run(c.url, func(t *testing.T) {
			u, err := url.Parse(c.url)
			if err != nil {
				t.Fatal(err)
			}
			if got := store.Redact(u); got != c.want {
				t.Errorf("Redact(%q) = %q, want %q", c.url, got, c.want)
			}
			if got := store.RedactString(c.url); got != c.want {
				t.Errorf("RedactString(%q) = %q, want %q", c.url, got, c.want)
			}
		})
	}
	if got := store.Redact(nil); got != "" {
		t.Errorf("Redact(nil) = %q", got)
	}
	if got := store.RedactString("postgres://u:s3cret@host:bad/db"); got != "postgres://…" {
		t.Errorf("RedactString of an unparsable URL = %q, want only its scheme", got)
	}
}

// Secrets are hidden where they are, and only there: the password of the URL in its place,
// the values of secret parameters, and in free text (a driver's error) the secret's whole
// occurrences, never a piece of a longer word such as the host name (T4).
func TestRedactOnlyTheSecret(t *testing.T) {
	for _, c := range []struct {
		name, url, want string
	}{
		{"short password, host localhost", "postgres://lh:lh@localhost:5432/lh?sslmode=disable", "postgres://lh:xxxxx@localhost:5432/lh?sslmode=disable"},
		{"user name within the password", "postgres://hold:leasehold@localhost/db", "postgres://hold:xxxxx@localhost/db"},
		{"escaped password", "mysql://u:p%40ss%2Fw%3Ard@localhost/db?token=a%26b&tls=true", "mysql://u:xxxxx@localhost/db?tls=true&token=xxxxx"},
	} {
		t.Run(c.name, func(t *testing.T) {
			u, err := url.Parse(c.url)
			if err != nil {
				t.Fatal(err)
			}
			if got := store.Redact(u); got != c.want {
				t.Errorf("Redact = %q, want %q", got, c.want)
			}
		})
	}

	for _, c := range []struct {
		name, url, msg, want string
	}{
		{"short password, host localhost", "postgres://lh:lh@localhost/lh",
			`failed to connect to host=localhost user=lh database=lh: password lh rejected for "lh"`,
			`failed to connect to host=localhost user=xxxxx database=xxxxx: password xxxxx rejected for "xxxxx"`},
		{"user name within the password", "postgres://hold:leasehold@localhost/db",
			"user hold: password leasehold is wrong (leaseholder, holding)",
			"user hold: password xxxxx is wrong (leaseholder, holding)"},
		{"escaped password, both spellings", "mysql://u:p%40ss@localhost/db",
			"dial u:p%40ss@localhost: bad password p@ss; ap@ssx stays",
			"dial u:xxxxx@localhost: bad password xxxxx; ap@ssx stays"},
		{"secret parameter", "redis://localhost/0?token=tok3n",
			"auth tok3n failed at localhost; tok3ns, mytok3n stay",
			"auth xxxxx failed at localhost; tok3ns, mytok3n stay"},
		{"secret with edges that are not letters", "redis://:%40lh%21@localhost/0",
			"password @lh! in x@lh!y and @lh!", "password xxxxx in xxxxxxy and xxxxx"},
	} {
		t.Run("error/"+c.name, func(t *testing.T) {
			u, err := url.Parse(c.url)
			if err != nil {
				t.Fatal(err)
			}
			if got := store.RedactError(errors.New(c.msg), u).Error(); got != c.want {
				t.Errorf("RedactError:\n got %q\nwant %q", got, c.want)
			}
		})
	}

	// url.Parse's errors: a quoted piece of the password is hidden, the user name is not.
	for _, raw := range []string{"postgres://hold:lease/hold@localhost/db", "postgres://lh:l/h@localhost/db"} {
		_, err := store.ParseURL(raw)
		if err == nil {
			t.Fatalf("ParseURL(%q) succeeded", raw)
		}
		if strings.Contains(err.Error(), "lease") || strings.Contains(err.Error(), ":l") {
			t.Errorf("ParseURL: %v reveals a piece of the password", err)
		}
	}
}

// The password of a URL given as a parameter (an endpoint) is hidden from errors too.
func TestRedactErrorNestedURL(t *testing.T) {
	u, err := url.Parse("s3://bucket/p?endpoint=http://u:n3sted@host:9000")
	if err != nil {
		t.Fatal(err)
	}
	got := store.RedactError(errors.New("dial http://u:n3sted@host:9000: refused"), u).Error()
	if strings.Contains(got, "n3sted") {
		t.Errorf("RedactError kept the endpoint's password: %q", got)
	}
}
