package gcs

import (
	"context"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// TestBadURL checks the errors for malformed URLs and bad parameters: configuration errors that
// name the parameter (and the bucket), never a secret.
func TestBadURL(t *testing.T) {
	t.Parallel()
	storetest.BadURLs(t, "hunter2secret", map[string]string{
		"gs://u:hunter2secret@my-bucket/p":                             "user information",
		"gs://my-bucket/p?bogus=1":                                     `"bogus"`,
		"gs://my-bucket/p?token=hunter2secret":                         `"token"`,
		"gs://My_Bucket/p":                                             "bucket name",
		"gs://my-bucket:8080/p":                                        "bucket name",
		"gs://ab/p":                                                    "bucket name",
		"gs:///p":                                                      "names no bucket",
		"gs:my-bucket":                                                 "names no bucket",
		"gs://my-bucket//p":                                            "prefix",
		"gs://my-bucket/p*":                                            "prefix",
		"gs://my-bucket/" + strings.Repeat("p", 600):                   "prefix",
		"gs://my-bucket/p#frag":                                        "fragment",
		"gs://my-bucket/p?endpoint=ftp://127.0.0.1":                    `"endpoint"`,
		"gs://my-bucket/p?endpoint=127.0.0.1:4443":                     `"endpoint"`,
		"gs://my-bucket/p?endpoint=http://a&endpoint=http://b":         `"endpoint"`,
		"gs://my-bucket/p?anonymous=perhaps":                           `"anonymous"`,
		"gs://my-bucket/p?endpoint=http://127.0.0.1:1&anonymous=false": `"anonymous"`,
		"gs://my-bucket/p?open_timeout=soon":                           `"open_timeout"`,
		"gs://my-bucket/p?open_timeout=-1s":                            `"open_timeout"`,
	}, func(ctx context.Context, raw string) (store.Store, error) { return Open(ctx, raw) })
	// The errors of the parameters name the bucket too.
	_, err := Open(t.Context(), "gs://my-bucket/p?anonymous=perhaps")
	if err == nil || !strings.Contains(err.Error(), `"my-bucket"`) {
		t.Errorf("error %v does not name the bucket", err)
	}
}

// TestParams checks what each parameter sets: endpoint (the JSON API under it), anonymous
// (default true for an http endpoint or STORAGE_EMULATOR_HOST, which carry no credentials;
// false otherwise), open_timeout (default 10s), the prefix from the path.
func TestParams(t *testing.T) {
	t.Setenv(EmulatorHostEnv, "")
	for raw, want := range map[string]config{
		"gs://my-bucket":                                             {bucket: "my-bucket", openTimeout: defaultOpenTimeout},
		"gs://my-bucket/":                                            {bucket: "my-bucket", openTimeout: defaultOpenTimeout},
		"gs://my.bucket.example/a/b/":                                {bucket: "my.bucket.example", prefix: "a/b/", openTimeout: defaultOpenTimeout},
		"gs://my-bucket/a?endpoint=http://127.0.0.1:1/":              {bucket: "my-bucket", prefix: "a/", endpoint: "http://127.0.0.1:1", anonymous: true, openTimeout: defaultOpenTimeout},
		"gs://my-bucket?endpoint=https://gcs.example":                {bucket: "my-bucket", endpoint: "https://gcs.example", openTimeout: defaultOpenTimeout},
		"gs://my-bucket?endpoint=https://gcs.example&anonymous=true": {bucket: "my-bucket", endpoint: "https://gcs.example", anonymous: true, openTimeout: defaultOpenTimeout},
		"gs://my-bucket?anonymous=1&open_timeout=2s":                 {bucket: "my-bucket", anonymous: true, openTimeout: 2e9},
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		c, err := parseConfig(u)
		if err != nil {
			t.Errorf("%s: %v", raw, err)
			continue
		}
		c.options = nil
		if !reflect.DeepEqual(*c, want) {
			t.Errorf("%s: %+v, want %+v", raw, *c, want)
		}
	}
	t.Setenv(EmulatorHostEnv, "127.0.0.1:1")
	c, err := parseConfig(&url.URL{Scheme: "gs", Host: "my-bucket"})
	if err != nil || !c.anonymous {
		t.Errorf("with %s set: %+v, %v, want anonymous", EmulatorHostEnv, c, err)
	}
}
