package store_test

import (
	"net/url"
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
