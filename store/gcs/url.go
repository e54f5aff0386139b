package gcs

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/api/option"
)

// EmulatorHostEnv is the client library's own convention for an emulator: when it is set and
// the URL has no endpoint parameter, requests go to that host, without credentials.
const EmulatorHostEnv = "STORAGE_EMULATOR_HOST"

// knownParams are the URL query parameters the store understands.
var knownParams = []string{"endpoint", "anonymous", "open_timeout"}

// config is what a store URL says.
type config struct {
	bucket      string
	prefix      string // "" or ends with "/"
	endpoint    string // "" for Google's (or STORAGE_EMULATOR_HOST's)
	anonymous   bool
	openTimeout time.Duration
	options     []option.ClientOption
}

// parseConfig reads a store URL: gs://BUCKET[/PREFIX][?param=value&...].
func parseConfig(u *url.URL) (*config, error) {
	if !strings.EqualFold(u.Scheme, "gs") {
		return nil, fmt.Errorf("store/gcs: URL scheme %q is not gs", u.Scheme)
	}
	if u.User != nil {
		return nil, errors.New("store/gcs: the URL holds user information; credentials come from Google's application default credentials, never from the URL")
	}
	if u.Opaque != "" || u.Host == "" {
		return nil, errors.New("store/gcs: the URL names no bucket (gs://BUCKET/PREFIX)")
	}
	if u.Port() != "" || !validBucket(u.Host) {
		return nil, fmt.Errorf("store/gcs: %q is not a bucket name (3 to 63 lower-case letters, digits, '-', '_' and '.', starting and ending with a letter or digit)", u.Host)
	}
	c := &config{bucket: u.Host, openTimeout: defaultOpenTimeout}
	if p := strings.TrimPrefix(u.Path, "/"); p != "" {
		if !strings.HasSuffix(p, "/") {
			p += "/"
		}
		if strings.HasPrefix(p, "/") || strings.Contains(p, "//") || !utf8.ValidString(p) || strings.ContainsAny(p, "\r\n\x00#[]*?") {
			return nil, fmt.Errorf("store/gcs: bucket %q: prefix %q is not a folder name (no empty segment, '#', '[', ']', '*', '?' or control character)", c.bucket, p)
		}
		if len(p) > maxPrefix {
			return nil, fmt.Errorf("store/gcs: bucket %q: prefix of %d bytes is longer than %d", c.bucket, len(p), maxPrefix)
		}
		c.prefix = p
	}
	if u.Fragment != "" {
		return nil, fmt.Errorf("store/gcs: bucket %q: unexpected fragment in the URL", c.bucket)
	}
	q := u.Query()
	for k := range q {
		if !slices.Contains(knownParams, k) {
			return nil, fmt.Errorf("store/gcs: bucket %q: unknown URL parameter %q (known: %s)", c.bucket, k, strings.Join(knownParams, ", "))
		}
		if len(q[k]) > 1 {
			return nil, fmt.Errorf("store/gcs: bucket %q: URL parameter %q is given %d times", c.bucket, k, len(q[k]))
		}
	}
	if v := q.Get("endpoint"); v != "" {
		e, err := url.Parse(v)
		if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" || e.User != nil || e.RawQuery != "" || e.Fragment != "" {
			return nil, fmt.Errorf("store/gcs: bucket %q: URL parameter \"endpoint\": %q is not an http:// or https:// URL such as http://127.0.0.1:4443", c.bucket, redactEndpoint(v))
		}
		c.endpoint = strings.TrimSuffix(e.String(), "/")
	}
	// Plain HTTP never carries credentials: an access token sent in clear could be replayed by
	// whoever reads it. An http endpoint is an emulator's, which needs none.
	plain := strings.HasPrefix(c.endpoint, "http://") || c.endpoint == "" && os.Getenv(EmulatorHostEnv) != ""
	c.anonymous = plain
	switch v := strings.ToLower(q.Get("anonymous")); v {
	case "":
	case "true", "1":
		c.anonymous = true
	case "false", "0":
		if strings.HasPrefix(c.endpoint, "http://") {
			return nil, fmt.Errorf("store/gcs: bucket %q: URL parameter \"anonymous\": false with a plain http endpoint would send credentials in clear", c.bucket)
		}
		c.anonymous = false
	default:
		return nil, fmt.Errorf("store/gcs: bucket %q: URL parameter \"anonymous\": %q is not true or false", c.bucket, v)
	}
	if v := q.Get("open_timeout"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("store/gcs: bucket %q: URL parameter \"open_timeout\": %q is not a positive duration such as \"10s\"", c.bucket, v)
		}
		c.openTimeout = d
	}
	if c.endpoint != "" {
		// The JSON API lives under /storage/v1/ of the endpoint; reads (XML API) go to its
		// host, and uploads to /upload/storage/v1/.
		c.options = append(c.options, option.WithEndpoint(c.endpoint+"/storage/v1/"))
	}
	if c.anonymous {
		c.options = append(c.options, option.WithoutAuthentication())
	}
	return c, nil
}

// defaultOpenTimeout bounds Open when its context has no deadline.
const defaultOpenTimeout = 10 * time.Second

// maxPrefix bounds the prefix, so that an encoded key has room in GCS's 1024-byte names.
const maxPrefix = 512

// validBucket reports whether b is a bucket name as GCS accepts it (dotted names up to 222
// bytes, each dot-separated part up to 63).
func validBucket(b string) bool {
	if len(b) < 3 || len(b) > 222 {
		return false
	}
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
	if !alnum(b[0]) || !alnum(b[len(b)-1]) {
		return false
	}
	for _, part := range strings.Split(b, ".") {
		if part == "" || len(part) > 63 {
			return false
		}
	}
	if !strings.Contains(b, ".") && len(b) > 63 {
		return false
	}
	for i := 0; i < len(b); i++ {
		if c := b[i]; !alnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// redactEndpoint returns an endpoint value for an error, without user information it may
// hold by mistake.
func redactEndpoint(v string) string {
	if e, err := url.Parse(v); err == nil {
		if e.User != nil {
			e.User = url.User("xxxxx")
		}
		return e.String()
	}
	if at := strings.LastIndex(v, "@"); at >= 0 {
		return "xxxxx" + v[at:]
	}
	return v
}
