package health

import (
	"context"
	"strings"
	"testing"
)

// CheckURL refuses what URL would fail on at every check, naming the caller's parameter and
// never showing a password, and URL's check fails with the same words.
func TestCheckURL(t *testing.T) {
	cases := []struct {
		url, want string
	}{
		{"ftp://127.0.0.1/healthz", `--health-url ftp://127.0.0.1/healthz: the scheme must be http or https`},
		{"http://user:s3cret@/healthz", `--health-url http://user:xxxxx@/healthz: no host`},
		{"http://user:s3cret@127.0.0.1:bad/healthz", `--health-url: cannot parse the URL "http://xxxxx@127.0.0.1:bad/healthz"`},
		{"127.0.0.1 healthz", `--health-url 127.0.0.1%20healthz: the scheme must be http or https`},
	}
	for _, c := range cases {
		err := CheckURL("--health-url", c.url)
		if err == nil || err.Error() != c.want {
			t.Errorf("CheckURL(%q) = %v; want %s", c.url, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("CheckURL(%q) shows the password: %v", c.url, err)
		}
		rerr := URL(c.url)(context.Background())
		if want := "health: URL" + strings.TrimPrefix(c.want, "--health-url"); rerr == nil || rerr.Error() != want {
			t.Errorf("URL(%q)'s check = %v; want %s", c.url, rerr, want)
		}
	}
	if err := CheckURL("--health-url", "https://127.0.0.1:8443/healthz"); err != nil {
		t.Errorf("CheckURL of a good URL: %v", err)
	}
}
