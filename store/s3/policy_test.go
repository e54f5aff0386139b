package s3

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/docsection"
)

// TestDocumentedPolicy checks that the least permissions of docs/backends.md ("### S3" under
// "## Cloud stores") grant exactly the actions of the S3 calls the store makes (APICalls): the
// bucket-level one on the bucket, the object ones on the prefix's objects.
func TestDocumentedPolicy(t *testing.T) {
	t.Parallel()
	block, err := docsection.ReadBlock("../../docs/backends.md", "json", "## Cloud stores", "### S3")
	if err != nil {
		t.Fatal(err)
	}
	var policy struct {
		Version   string
		Statement []struct {
			Effect   string
			Action   any
			Resource any
		}
	}
	if err := json.Unmarshal([]byte(block.Text), &policy); err != nil {
		t.Fatalf("%s: the policy is not JSON: %v", block.Pos(), err)
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
