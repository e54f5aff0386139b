package azblob

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/leasehold/leasehold/internal/docsection"
	"github.com/leasehold/leasehold/store"
)

// roleDefinition reads the role definition docs/backends.md gives for this store: the first
// json block of its section "### Azure Blob Storage".
func roleDefinition(t *testing.T) (actions, dataActions []string) {
	t.Helper()
	block, err := docsection.ReadBlock("../../docs/backends.md", "json", "### Azure Blob Storage")
	if err != nil {
		t.Fatal(err)
	}
	var role struct {
		Actions, NotActions, DataActions, NotDataActions []string
	}
	if err := json.Unmarshal([]byte(block.Text), &role); err != nil {
		t.Fatalf("%s: the role definition: %v", block.Pos(), err)
	}
	return role.Actions, role.DataActions
}

// TestRoleDefinitionMatchesCalls: the role docs/backends.md gives grants exactly the data
// actions of the operations the store makes (APICalls), and no control-plane action; and the
// operations the store sends, recorded by a proxy while it opens and runs every call, are all
// in APICalls.
func TestRoleDefinitionMatchesCalls(t *testing.T) {
	t.Parallel()
	actions, dataActions := roleDefinition(t)
	if len(actions) != 0 {
		t.Errorf("the role grants control-plane actions %v; the store needs none", actions)
	}
	want := slices.Sorted(maps.Values(APICalls))
	want = slices.Compact(want)
	slices.Sort(dataActions)
	if !slices.Equal(dataActions, want) {
		t.Errorf("the role's data actions are %v, the store's calls need %v", dataActions, want)
	}

	s, p := openProxied(t)
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
	if _, err := s.Get(ctx, "missing"); err == nil {
		t.Fatal("Get of a missing key succeeded")
	}
	if err := s.Patch(ctx, "k", map[string]any{"rev": 2}, cond); err != nil {
		t.Fatal(err)
	}
	if err := s.Patch(ctx, "k", map[string]any{"rev": 3}, cond); err == nil {
		t.Fatal("Patch on a failed condition succeeded")
	}
	if err := s.Delete(ctx, "k", nil); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, op := range p.take() {
		seen[op] = true
		if _, ok := APICalls[op]; !ok {
			t.Errorf("the store sent %s, which is not in APICalls (nor in the role)", op)
		}
	}
	for op := range APICalls {
		if !seen[op] {
			t.Errorf("APICalls lists %s, which the store did not send", op)
		}
	}
}
