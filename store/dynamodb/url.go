package dynamodb

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/leasehold/leasehold/store/driver"
)

// knownParams are the URL query parameters a store URL may carry.
var knownParams = []string{"table", "region", "endpoint", "profile", "create_table", "open_timeout"}

// config is what a store URL says.
type config struct {
	table       string
	region      string // "" for the region of the AWS configuration
	endpoint    string // "" for the region's DynamoDB endpoint
	profile     string // "" for the default profile (or AWS_PROFILE)
	createTable bool
	openTimeout time.Duration
}

// parseConfig reads a store URL. The URL holds no credential: they come from the AWS
// configuration chain.
func parseConfig(u *url.URL) (*config, error) {
	if !strings.EqualFold(u.Scheme, "dynamodb") {
		return nil, fmt.Errorf("store/dynamodb: URL scheme %q is not dynamodb", u.Scheme)
	}
	if u.User != nil {
		return nil, errors.New("store/dynamodb: the URL holds user information; credentials come from the AWS configuration (environment, shared profile, web identity, instance metadata), never from the URL")
	}
	if u.Opaque != "" {
		return nil, errors.New("store/dynamodb: the URL names no table (dynamodb://TABLE?region=REGION)")
	}
	if u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("store/dynamodb: unexpected path %q in the URL (dynamodb://TABLE?region=REGION)", u.Path)
	}
	if u.Port() != "" {
		return nil, fmt.Errorf("store/dynamodb: unexpected port in the URL's table name %q (the endpoint parameter names a server)", u.Host)
	}
	q := u.Query()
	for k := range q {
		if !slices.Contains(knownParams, k) {
			return nil, fmt.Errorf("store/dynamodb: unknown URL parameter %q (known: %s)", k, strings.Join(knownParams, ", "))
		}
		if len(q[k]) > 1 {
			return nil, fmt.Errorf("store/dynamodb: URL parameter %q is given %d times", k, len(q[k]))
		}
	}
	c := &config{openTimeout: 30 * time.Second}
	c.table = driver.TakeParam(q, "table", u.Host)
	if c.table == "" {
		return nil, errors.New("store/dynamodb: the URL names no table (dynamodb://TABLE?region=REGION, or the table parameter)")
	}
	if !validTable(c.table) {
		return nil, fmt.Errorf("store/dynamodb: URL parameter \"table\": %q is not a DynamoDB table name (3 to 255 letters, digits, '_', '-' and '.')", c.table)
	}
	if q.Has("region") {
		c.region = q.Get("region")
		if !validRegion(c.region) {
			return nil, fmt.Errorf("store/dynamodb: URL parameter \"region\": %q is not a region name such as us-east-1", c.region)
		}
	}
	if q.Has("endpoint") {
		e, err := parseEndpoint(q.Get("endpoint"))
		if err != nil {
			return nil, err
		}
		c.endpoint = e
	}
	if q.Has("profile") {
		c.profile = q.Get("profile")
		if c.profile == "" || strings.ContainsAny(c.profile, " \t\r\n[]") {
			return nil, fmt.Errorf("store/dynamodb: URL parameter \"profile\": %q is not a profile name of the shared AWS configuration", c.profile)
		}
	}
	switch v := strings.ToLower(q.Get("create_table")); v {
	case "", "false", "0":
	case "true", "1":
		c.createTable = true
	default:
		return nil, fmt.Errorf("store/dynamodb: URL parameter \"create_table\": %q is not true or false", v)
	}
	if v := q.Get("open_timeout"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("store/dynamodb: URL parameter \"open_timeout\": %q is not a positive duration such as \"30s\"", v)
		}
		c.openTimeout = d
	}
	return c, nil
}

// parseEndpoint checks the endpoint parameter: an http or https URL of a server, without
// user information (a credential has no place in it), path, query or fragment. Its errors do
// not quote it, in case it holds a credential all the same.
func parseEndpoint(raw string) (string, error) {
	e, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", errors.New("store/dynamodb: URL parameter \"endpoint\" is not a URL (http://host:port)")
	case e.User != nil:
		return "", errors.New("store/dynamodb: URL parameter \"endpoint\" holds user information: credentials come from the AWS configuration, never from the URL")
	case e.Scheme != "http" && e.Scheme != "https":
		return "", fmt.Errorf("store/dynamodb: URL parameter \"endpoint\": scheme %q is not http or https", e.Scheme)
	case e.Host == "":
		return "", errors.New("store/dynamodb: URL parameter \"endpoint\" names no host (http://host:port)")
	case (e.Path != "" && e.Path != "/") || e.RawQuery != "" || e.Fragment != "":
		return "", errors.New("store/dynamodb: URL parameter \"endpoint\" has a path, query or fragment; give only scheme://host:port")
	}
	return e.Scheme + "://" + e.Host, nil
}

// validTable reports whether t is a DynamoDB table name.
func validTable(t string) bool {
	if len(t) < 3 || len(t) > 255 {
		return false
	}
	for _, r := range t {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// validRegion reports whether r looks like an AWS region name (us-east-1, cn-north-1,
// us-gov-west-1; a local emulator accepts any).
func validRegion(r string) bool {
	if r == "" || len(r) > 64 || r[0] == '-' || r[len(r)-1] == '-' {
		return false
	}
	for _, c := range r {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
