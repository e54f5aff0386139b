package dynamodb

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/docsection"
	"github.com/leasehold/leasehold/store"
)

// TestDocumentedPermissions: the IAM policy of docs/backends.md ("### DynamoDB") grants exactly
// the calls the code lists (apiActions, and createTableActions for create_table=true), and a
// run of every operation, Open with create_table=true included, makes no call outside them and
// every call of apiActions.
func TestDocumentedPermissions(t *testing.T) {
	t.Parallel()
	block, err := docsection.ReadBlock("../../docs/backends.md", "json", "### DynamoDB")
	if err != nil {
		t.Fatal(err)
	}
	var policy struct {
		Statement []struct {
			Sid, Effect string
			Action      []string
			Resource    string
		}
	}
	if err := json.Unmarshal([]byte(block.Text), &policy); err != nil {
		t.Fatalf("%s: the policy: %v", block.Pos(), err)
	}
	granted := map[string][]string{}
	for _, s := range policy.Statement {
		if s.Effect != "Allow" || !strings.HasSuffix(s.Resource, ":table/TABLE") {
			t.Errorf("statement %s: effect %s on %s, want Allow on the table only", s.Sid, s.Effect, s.Resource)
		}
		granted[s.Sid] = slices.Sorted(slices.Values(s.Action))
	}
	for sid, want := range map[string][]string{"LeaseholdStore": apiActions, "LeaseholdCreateTable": createTableActions} {
		if w := slices.Sorted(slices.Values(want)); !slices.Equal(granted[sid], w) {
			t.Errorf("statement %s grants %v; the code makes %v", sid, granted[sid], w)
		}
	}

	// The calls a run makes, as the proxy sees them.
	emulatorEndpoint(t)
	p, s := faultProxy(t) // Open with create_table=true, through the proxy
	ctx := t.Context()
	cond := &store.Condition{Field: "a", Value: 1.0}
	s.Create(ctx, "k", map[string]any{"a": 1})
	s.Create(ctx, "k", map[string]any{"a": 1})
	s.Get(ctx, "k")
	s.Patch(ctx, "k", map[string]any{"a": 2}, cond)
	s.Patch(ctx, "k", map[string]any{"a": 3}, cond)
	s.Delete(ctx, "k", nil)
	s.Delete(ctx, "k", nil)
	var seen []string
	for _, op := range p.ops() {
		seen = append(seen, "dynamodb:"+op)
	}
	for _, a := range seen {
		if !slices.Contains(apiActions, a) && !slices.Contains(createTableActions, a) {
			t.Errorf("the store called %s, which the documented policy does not grant", a)
		}
	}
	for _, a := range apiActions {
		if !slices.Contains(seen, a) {
			t.Errorf("%s is listed but was never called (calls: %v)", a, seen)
		}
	}
	if !slices.Contains(seen, createTableActions[0]) {
		t.Errorf("Open with create_table=true did not call %s (calls: %v)", createTableActions[0], seen)
	}
}
