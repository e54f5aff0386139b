package s3

import (
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestDocumentedPolicy checks that the least permissions of docs/backends.md ("### S3" under
// "## Cloud stores") grant exactly the actions of the S3 calls the store makes (APICalls): the
// bucket-level one on the bucket, the object ones on the prefix's objects.
func TestDocumentedPolicy(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/backends.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	_, cloud, ok := strings.Cut(doc, "\n## Cloud stores\n")
	if !ok {
		t.Fatal(`docs/backends.md has no "## Cloud stores" section`)
	}
	_, section, ok := strings.Cut(cloud, "\n### S3\n")
	if !ok {
		t.Fatal(`docs/backends.md has no "### S3" section under "## Cloud stores"`)
	}
	if i := strings.Index(section, "\n### "); i >= 0 {
		section = section[:i]
	}
	_, block, ok := strings.Cut(section, "```json\n")
	if !ok {
		t.Fatal("the S3 section has no json block")
	}
	block, _, _ = strings.Cut(block, "```")
	var policy struct {
		Version   string
		Statement []struct {
			Effect   string
			Action   any
			Resource any
		}
	}
	if err := json.Unmarshal([]byte(block), &policy); err != nil {
		t.Fatalf("the policy is not JSON: %v", err)
	}
	list := func(v any) []string {
		switch v := v.(type) {
		case string:
			return []string{v}
		case []any:
			var out []string
			for _, s := range v {
				out = append(out, s.(string))
			}
			return out
		}
		return nil
	}
	granted := map[string]bool{}
	for _, st := range policy.Statement {
		if st.Effect != "Allow" {
			t.Errorf("statement with effect %q", st.Effect)
		}
		for _, a := range list(st.Action) {
			granted[a] = true
			for _, r := range list(st.Resource) {
				object := strings.Contains(r, "/")
				if bucketLevel := a == "s3:ListBucket"; bucketLevel == object {
					t.Errorf("%s granted on %s: the wrong level of resource", a, r)
				}
			}
		}
	}
	needed := map[string]bool{}
	for _, a := range APICalls {
		needed[a] = true
	}
	if !maps.Equal(granted, needed) {
		t.Errorf("the documented policy grants %v; the store's calls need %v",
			slices.Sorted(maps.Keys(granted)), slices.Sorted(maps.Keys(needed)))
	}
	if policy.Version != "2012-10-17" {
		t.Errorf("policy version %q", policy.Version)
	}
}
