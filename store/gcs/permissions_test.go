package gcs

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/docsection"
	"github.com/leasehold/leasehold/store"
)

// TestLeastPermissions checks the role docs/backends.md gives against Permissions, and
// Permissions against the requests the store makes: Open, and every operation, through the
// shim that records them, each request mapped to the IAM permission Cloud Storage checks for
// it. A request the mapping does not know fails the test, as does a permission of Permissions
// no request needs.
func TestLeastPermissions(t *testing.T) {
	t.Parallel()
	block, err := docsection.ReadBlock("../../docs/backends.md", "json", "### Google Cloud Storage")
	if err != nil {
		t.Fatal(err)
	}
	var role struct {
		IncludedPermissions []string `json:"includedPermissions"`
	}
	if err := json.Unmarshal([]byte(block.Text), &role); err != nil {
		t.Fatalf("%s: the role: %v", block.Pos(), err)
	}
	slices.Sort(role.IncludedPermissions)
	if !slices.Equal(role.IncludedPermissions, Permissions) {
		t.Errorf("docs/backends.md's role holds %v, the store needs %v", role.IncludedPermissions, Permissions)
	}

	e := emulator(t)
	bucket := newBucket(t, e.Endpoint)
	sh, endpoint := newShim(t, e.Endpoint)
	s := mustOpen(t, storeURL(endpoint, bucket, "p"))
	ctx := t.Context()
	cond := &store.Condition{Field: "rev", Value: 1}
	if err := s.Create(ctx, "k", map[string]any{"rev": 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, "k", map[string]any{"rev": 1}); err == nil {
		t.Fatal("second Create succeeded")
	}
	if _, err := s.Get(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if err := s.Patch(ctx, "k", map[string]any{"rev": 2}, cond); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "k", &store.Condition{Field: "rev", Value: 2}); err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, req := range sh.recorded() {
		perms := permissionsOf(req, bucket)
		if perms == nil {
			t.Errorf("request %s: no permission known for it", req)
		}
		for _, p := range perms {
			used[p] = true
		}
	}
	var got []string
	for p := range used {
		got = append(got, p)
	}
	slices.Sort(got)
	if !slices.Equal(got, Permissions) {
		t.Errorf("the requests need %v, Permissions says %v", got, Permissions)
	}
}

// permissionsOf returns the IAM permissions Cloud Storage checks for the request
// "METHOD path?query" on bucket, nil for one it does not know.
func permissionsOf(req, bucket string) []string {
	method, uri, _ := strings.Cut(req, " ")
	u, err := url.Parse(uri)
	if err != nil {
		return nil
	}
	q := u.Query()
	switch {
	case method == "GET" && u.Path == "/storage/v1/b/"+bucket+"/o":
		return []string{"storage.objects.list"}
	case method == "GET" && (strings.HasPrefix(u.Path, "/storage/v1/b/"+bucket+"/o/") || strings.HasPrefix(u.Path, "/"+bucket+"/")):
		return []string{"storage.objects.get"} // JSON API metadata, or the XML API's read
	case method == "POST" && u.Path == "/upload/storage/v1/b/"+bucket+"/o":
		if q.Get("ifGenerationMatch") == "0" {
			return []string{"storage.objects.create"}
		}
		// Replacing an object needs delete on it as well.
		return []string{"storage.objects.create", "storage.objects.delete"}
	case method == "DELETE" && strings.HasPrefix(u.Path, "/storage/v1/b/"+bucket+"/o/"):
		return []string{"storage.objects.delete"}
	}
	return nil
}
