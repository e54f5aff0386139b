package file

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/leasehold/leasehold/store"
)

// The URL form is file:///absolute/path/to/file.json (an empty host, or localhost). Relative
// paths are refused: a store's meaning should not depend on the working directory of whoever
// opens the URL.
func init() {
	store.Register(store.Backend{Schemes: []string{"file"}, Open: func(_ context.Context, u *url.URL) (store.Store, error) {
		path, err := pathOf(u)
		if err != nil {
			return nil, err
		}
		return Open(path)
	}})
}

// pathOf returns the absolute file path of a file URL.
func pathOf(u *url.URL) (string, error) {
	const want = "want file:///absolute/path/to/file.json"
	switch {
	case u.Opaque != "":
		return "", fmt.Errorf("file URL %s has a relative path; %s", store.Redact(u), want)
	case u.User != nil:
		return "", fmt.Errorf("file URL %s has user information; %s", store.Redact(u), want)
	case u.Host != "" && u.Host != "localhost":
		return "", fmt.Errorf("file URL %s names host %q (a relative path?); %s", store.Redact(u), u.Host, want)
	case u.RawQuery != "" || u.ForceQuery:
		return "", fmt.Errorf("file URL %s has query parameters, which the file store does not take; %s", store.Redact(u), want)
	case u.Fragment != "":
		return "", fmt.Errorf("file URL %s has a fragment; %s", store.Redact(u), want)
	case u.Path == "" || u.Path == "/":
		return "", fmt.Errorf("file URL %s has no file path; %s", store.Redact(u), want)
	case !strings.HasPrefix(u.Path, "/"):
		return "", fmt.Errorf("file URL %s has a relative path; %s", store.Redact(u), want)
	case strings.HasSuffix(u.Path, "/"):
		return "", fmt.Errorf("file URL %s names a directory, not a file; %s", store.Redact(u), want)
	}
	return u.Path, nil
}
