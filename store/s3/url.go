package s3

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/leasehold/leasehold/store/driver"
)

// knownParams are the URL query parameters the store reads; any other is an error.
var knownParams = []string{"bucket", "prefix", "region", "endpoint", "path_style", "delete", "profile"}

// Delete modes: how Delete removes a record (see the package documentation).
const (
	DeleteAuto      = "auto"      // probe at Open: if-match where the service honours it, else tombstone
	DeleteIfMatch   = "if-match"  // DeleteObject with If-Match on the ETag read
	DeleteTombstone = "tombstone" // PutObject of a tombstone with If-Match on the ETag read
)

// settings is what a store URL says.
type settings struct {
	bucket    string
	prefix    string // "" or ending in "/"
	region    string // "" for the default chain's
	endpoint  string // "" for the service's own
	pathStyle bool
	delete    string // DeleteAuto, DeleteIfMatch or DeleteTombstone
	profile   string
}

// parseConfig reads a store URL. Credentials never come from it.
func parseConfig(u *url.URL) (*settings, error) {
	if !strings.EqualFold(u.Scheme, "s3") {
		return nil, fmt.Errorf("store/s3: URL scheme %q is not s3", u.Scheme)
	}
	if u.User != nil {
		return nil, errors.New("store/s3: the URL holds user information: credentials come from the AWS chain (environment, shared config, workload identity, instance metadata), never from the URL")
	}
	if u.Opaque != "" {
		return nil, errors.New("store/s3: the URL names no bucket (s3://BUCKET/PREFIX)")
	}
	if u.Port() != "" {
		return nil, fmt.Errorf("store/s3: the URL's host %q is a bucket name and has no port (use the endpoint parameter for a server)", u.Host)
	}
	if u.Fragment != "" {
		return nil, errors.New("store/s3: unexpected fragment in the URL")
	}
	q := u.Query()
	for k := range q {
		if !slices.Contains(knownParams, k) {
			return nil, fmt.Errorf("store/s3: unknown URL parameter %q (known: %s)", k, strings.Join(knownParams, ", "))
		}
	}
	c := &settings{}
	c.bucket = driver.TakeParam(q, "bucket", u.Host)
	if c.bucket == "" {
		return nil, errors.New("store/s3: the URL names no bucket (s3://BUCKET/PREFIX or the bucket parameter)")
	}
	if err := checkBucket(c.bucket); err != nil {
		return nil, fmt.Errorf("store/s3: bucket %q: %w", c.bucket, err)
	}
	c.prefix = driver.TakeParam(q, "prefix", strings.TrimPrefix(u.Path, "/"))
	if c.prefix != "" && !strings.HasSuffix(c.prefix, "/") {
		c.prefix += "/"
	}
	if err := checkPrefix(c.prefix); err != nil {
		return nil, fmt.Errorf("store/s3: URL parameter \"prefix\" (or the URL's path): %w", err)
	}
	c.region = driver.TakeParam(q, "region", "")
	if c.region != "" && !validRegion(c.region) {
		return nil, fmt.Errorf("store/s3: URL parameter \"region\": %q is not a region name (such as us-east-1)", c.region)
	}
	c.profile = driver.TakeParam(q, "profile", "")
	if ep := driver.TakeParam(q, "endpoint", ""); ep != "" {
		e, err := url.Parse(ep)
		if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" || e.RawQuery != "" || e.Fragment != "" || (e.Path != "" && e.Path != "/") {
			return nil, errors.New("store/s3: URL parameter \"endpoint\": not a server URL such as http://127.0.0.1:7070 or https://s3.example.com")
		}
		if e.User != nil {
			return nil, errors.New("store/s3: URL parameter \"endpoint\": it holds user information: credentials come from the AWS chain, never from the URL")
		}
		c.endpoint = e.Scheme + "://" + e.Host
	}
	switch v := strings.ToLower(driver.TakeParam(q, "path_style", "false")); v {
	case "true", "1":
		c.pathStyle = true
	case "false", "0", "":
	default:
		return nil, fmt.Errorf("store/s3: URL parameter \"path_style\": %q is not true or false", v)
	}
	switch v := driver.TakeParam(q, "delete", DeleteAuto); v {
	case DeleteAuto, DeleteIfMatch, DeleteTombstone:
		c.delete = v
	default:
		return nil, fmt.Errorf("store/s3: URL parameter \"delete\": %q is not %s, %s or %s", v, DeleteAuto, DeleteIfMatch, DeleteTombstone)
	}
	return c, nil
}

// checkBucket applies the bucket naming rules of S3 general purpose buckets: 3 to 63
// characters, lower-case letters, digits, '.' and '-', starting and ending with a letter or
// digit.
func checkBucket(b string) error {
	if len(b) < 3 || len(b) > 63 {
		return errors.New("a bucket name has 3 to 63 characters")
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && c != '.' && c != '-' {
			return errors.New("a bucket name holds only lower-case letters, digits, '.' and '-'")
		}
		if !alnum && (i == 0 || i == len(b)-1) {
			return errors.New("a bucket name starts and ends with a letter or a digit")
		}
	}
	return nil
}

// checkPrefix refuses a prefix S3 would not keep as given: too long, not UTF-8 text, with
// control characters, or with an empty, "." or ".." segment, which S3-compatible servers that
// keep objects as files (versitygw, MinIO) refuse or merge.
func checkPrefix(p string) error {
	if len(p) > 512 {
		return errors.New("longer than 512 bytes")
	}
	if !strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f || r == 0xfffd }) {
		if p == "" {
			return nil
		}
		for _, seg := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
			if seg == "" || seg == "." || seg == ".." {
				return fmt.Errorf("%q has an empty, \".\" or \"..\" segment", p)
			}
		}
		return nil
	}
	return fmt.Errorf("%q holds a control character or is not UTF-8", p)
}

// validRegion reports whether r looks like a region name: lower-case letters, digits and '-'.
func validRegion(r string) bool {
	for i := 0; i < len(r); i++ {
		c := r[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return len(r) <= 64
}
