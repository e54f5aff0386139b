package azblob

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/leasehold/leasehold/store/driver"
)

// DefaultConnectionStringEnv is the environment variable a connection string is read from when
// the URL asks for one (identity=connection_string) without naming another.
const DefaultConnectionStringEnv = "AZURE_STORAGE_CONNECTION_STRING"

// The values of the identity parameter.
const (
	credentialDefault          = "default"
	credentialConnectionString = "connection_string"
)

var knownParams = []string{"endpoint", "identity", "connection_string_env"}

// config is what a store URL says, and the connection string it names.
type config struct {
	account   string // the storage account, the URL's host
	container string
	prefix    string // put before every blob name
	// serviceURL is the account's blob endpoint, without a trailing slash.
	serviceURL string
	credential string // credentialDefault or credentialConnectionString
	envName    string // the variable holding the connection string
	// From the connection string: a shared key or a SAS, the secrets errors must not show.
	sharedKey string
	sas       string
}

// secrets returns what no error may show: the connection string's key and signature.
func (c *config) secrets() []string {
	var s []string
	if c.sharedKey != "" {
		s = append(s, c.sharedKey)
	}
	if c.sas != "" {
		s = append(s, c.sas)
		if q, err := url.ParseQuery(c.sas); err == nil && q.Get("sig") != "" {
			s = append(s, q.Get("sig"), url.QueryEscape(q.Get("sig")))
		}
	}
	return s
}

// parseConfig reads a store URL, and the connection string it names from the environment.
// Its errors name the parameter or the part at fault, never a secret.
func parseConfig(u *url.URL) (*config, error) {
	if !strings.EqualFold(u.Scheme, Scheme) {
		return nil, fmt.Errorf("store/azblob: URL scheme %q is not %s", u.Scheme, Scheme)
	}
	if u.User != nil {
		return nil, errors.New("store/azblob: the URL holds user information: credentials come from the environment (DefaultAzureCredential, or a connection string), never from the URL")
	}
	if u.Opaque != "" || u.Host == "" {
		return nil, errors.New("store/azblob: the URL names no storage account (azblob://ACCOUNT/CONTAINER[/PREFIX])")
	}
	if u.Fragment != "" {
		return nil, errors.New("store/azblob: unexpected fragment in the URL")
	}
	c := &config{account: u.Host}
	if err := c.parseLocation(u.Path); err != nil {
		return nil, err
	}
	q := u.Query()
	for k := range q {
		if !slices.Contains(knownParams, k) {
			return nil, fmt.Errorf("store/azblob: unknown URL parameter %q (known: %s)", k, strings.Join(knownParams, ", "))
		}
	}
	for _, k := range knownParams {
		if len(q[k]) > 1 {
			return nil, fmt.Errorf("store/azblob: URL parameter %q is given more than once", k)
		}
	}
	endpoint := driver.TakeParam(q, "endpoint", "")
	envName := driver.TakeParam(q, "connection_string_env", "")
	c.credential = driver.TakeParam(q, "identity", "")
	switch {
	case c.credential == "" && envName != "":
		c.credential = credentialConnectionString
	case c.credential == "":
		c.credential = credentialDefault
	case c.credential == credentialDefault && envName != "":
		return nil, errors.New("store/azblob: URL parameter \"connection_string_env\" needs identity=connection_string, not identity=default")
	case c.credential != credentialDefault && c.credential != credentialConnectionString:
		return nil, fmt.Errorf("store/azblob: URL parameter \"identity\": %q is not default or connection_string", c.credential)
	}
	if endpoint != "" {
		e, err := parseEndpoint(endpoint)
		if err != nil {
			return nil, err
		}
		c.serviceURL = e
	}
	if c.credential == credentialDefault {
		if c.serviceURL == "" {
			c.serviceURL = "https://" + c.account + ".blob.core.windows.net"
		}
		if !strings.HasPrefix(c.serviceURL, "https://") {
			return nil, fmt.Errorf("store/azblob: URL parameter \"endpoint\": %q is not https, which an Azure AD token (identity=default) requires; use identity=connection_string for an emulator", endpoint)
		}
		return c, nil
	}
	c.envName = envName
	if c.envName == "" {
		c.envName = DefaultConnectionStringEnv
	}
	if !validEnvName(c.envName) {
		return nil, fmt.Errorf("store/azblob: URL parameter \"connection_string_env\": %q is not an environment variable name", c.envName)
	}
	cs, ok := os.LookupEnv(c.envName)
	if !ok || strings.TrimSpace(cs) == "" {
		return nil, fmt.Errorf("store/azblob: the environment variable %s holds no connection string (identity=connection_string)", c.envName)
	}
	if err := c.parseConnectionString(cs); err != nil {
		return nil, err
	}
	return c, nil
}

// parseLocation reads the storage account (already in c), the container and the prefix from
// the URL's host and path, as Azure's naming rules allow them.
func (c *config) parseLocation(urlPath string) error {
	if !validAccount(c.account) {
		return fmt.Errorf("store/azblob: %q is not a storage account name (3 to 24 lower-case letters and digits)", c.account)
	}
	path := strings.TrimPrefix(urlPath, "/")
	c.container, c.prefix, _ = strings.Cut(path, "/")
	if c.container == "" {
		return errors.New("store/azblob: the URL names no container (azblob://ACCOUNT/CONTAINER[/PREFIX])")
	}
	if !validContainer(c.container) {
		return fmt.Errorf("store/azblob: %q is not a container name (3 to 63 lower-case letters, digits and single hyphens, starting and ending with a letter or digit)", c.container)
	}
	if len(c.prefix) > 512 {
		return fmt.Errorf("store/azblob: prefix %q is longer than 512 bytes", c.prefix)
	}
	if strings.Contains(c.prefix, "//") || strings.HasPrefix(c.prefix, ".") || strings.Contains(c.prefix, "/.") ||
		strings.ContainsAny(c.prefix, "\\") || strings.ContainsFunc(c.prefix, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("store/azblob: prefix %q has an empty or dot-led path segment, a backslash or a control character", c.prefix)
	}
	return nil
}

// parseConnectionString reads an Azure Storage connection string: AccountName and AccountKey
// (a shared key) or SharedAccessSignature, and where the endpoint is (BlobEndpoint, or
// DefaultEndpointsProtocol and EndpointSuffix). The endpoint parameter, when given, wins over
// the string's. Its errors never quote the string.
func (c *config) parseConnectionString(cs string) error {
	fields := map[string]string{}
	for _, part := range strings.Split(strings.TrimRight(strings.TrimSpace(cs), ";"), ";") {
		k, v, ok := strings.Cut(part, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("store/azblob: the connection string in %s is malformed (want Key=Value pairs separated by ';')", c.envName)
		}
		fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	name := fields["AccountName"]
	c.sharedKey = fields["AccountKey"]
	c.sas = strings.TrimPrefix(fields["SharedAccessSignature"], "?")
	switch {
	case name != "" && c.sharedKey != "":
		c.sas = ""
	case c.sas != "":
		c.sharedKey = ""
	default:
		return fmt.Errorf("store/azblob: the connection string in %s has neither AccountName and AccountKey nor SharedAccessSignature", c.envName)
	}
	if name != "" && name != c.account {
		return fmt.Errorf("store/azblob: the connection string in %s is for account %q, not the URL's %q", c.envName, name, c.account)
	}
	if c.serviceURL != "" {
		return nil
	}
	if e := fields["BlobEndpoint"]; e != "" {
		s, err := parseEndpoint(e)
		if err != nil {
			return fmt.Errorf("store/azblob: BlobEndpoint of the connection string in %s: %w", c.envName, err)
		}
		c.serviceURL = s
		return nil
	}
	proto := fields["DefaultEndpointsProtocol"]
	if proto == "" {
		proto = "https"
	}
	if proto != "https" && proto != "http" {
		return fmt.Errorf("store/azblob: DefaultEndpointsProtocol of the connection string in %s: %q is not http or https", c.envName, proto)
	}
	suffix := fields["EndpointSuffix"]
	if suffix == "" {
		suffix = "core.windows.net"
	}
	c.serviceURL = proto + "://" + c.account + ".blob." + suffix
	return nil
}

// parseEndpoint checks a blob service endpoint (http or https, a host, an optional path, no
// query) and returns it without a trailing slash.
func parseEndpoint(raw string) (string, error) {
	e, err := url.Parse(raw)
	if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" || e.User != nil ||
		e.RawQuery != "" || e.Fragment != "" {
		return "", fmt.Errorf("store/azblob: URL parameter \"endpoint\": %q is not an http(s)://host[:port][/path] URL", redactEndpoint(raw))
	}
	return strings.TrimRight(e.String(), "/"), nil
}

// redactEndpoint hides the query of an endpoint, which could hold a signature.
func redactEndpoint(raw string) string {
	if i := strings.IndexAny(raw, "?@"); i >= 0 {
		return raw[:i] + "..."
	}
	return raw
}

func validAccount(s string) bool {
	if len(s) < 3 || len(s) > 24 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func validContainer(s string) bool {
	if len(s) < 3 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

func validEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}
