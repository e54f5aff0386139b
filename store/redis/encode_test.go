package redis

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/store/driver"
)

// TestAppendJSONAsMarshal checks that the script's arguments are written byte for byte as
// encoding/json writes them, on its fast paths (strings, whole numbers) and off them.
func TestAppendJSONAsMarshal(t *testing.T) {
	t.Parallel()
	values := []any{
		nil, true, false, "", "holder-1", "2026-12-04T22:07:30.123456789Z", `a"b`, `a\b`, "<&>", "tab\t",
		"é", "\u2028", "\x7f", 0.0, math.Copysign(0, -1), 1.0, -1.0, 2000.0, 1733350000123.0,
		float64(1<<53 - 1), float64(1 << 53), -float64(1 << 53), 1e21, 1e20, 0.5, 1e-7, 123456789.125,
		math.SmallestNonzeroFloat64, math.MaxFloat64, []any{1.0, "x"}, map[string]any{"a": nil},
	}
	for _, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendJSON([]byte("prefix"), v)
		if err != nil || string(got) != "prefix"+string(want) {
			t.Errorf("appendJSON(%#v) = %s, %v; want prefix%s", v, got, err, want)
		}
	}
	if _, err := appendJSON(nil, math.NaN()); err == nil {
		t.Error("appendJSON(NaN): no error")
	}
}

// TestPatchArgs checks the script's arguments: the operation, the condition and the pairs of
// fields, each its own text although they share a buffer.
func TestPatchArgs(t *testing.T) {
	t.Parallel()
	fields := map[string]any{"holder": "h", "term": 7.0, "long": string(make([]byte, 300))}
	args, err := patchArgs("patch", &driver.Condition{Field: "revision", Value: "R"}, fields)
	if err != nil {
		t.Fatal(err)
	}
	if len(args) != 4+2*len(fields) || args[0] != "patch" || args[1] != "1" ||
		string(args[2].([]byte)) != `"revision"` || string(args[3].([]byte)) != `"R"` {
		t.Fatalf("args %q", args)
	}
	seen := map[string]bool{}
	for i := 4; i < len(args); i += 2 {
		var name string
		if err := json.Unmarshal(args[i].([]byte), &name); err != nil {
			t.Fatalf("name %q: %v", args[i], err)
		}
		want, _ := json.Marshal(fields[name])
		if got := string(args[i+1].([]byte)); got != string(want) {
			t.Errorf("field %s: %s, want %s", name, got, want)
		}
		seen[name] = true
	}
	if len(seen) != len(fields) {
		t.Errorf("fields %v, want %v", seen, fields)
	}
	args, err = patchArgs("delete", nil, nil)
	if err != nil || len(args) != 4 || args[0] != "delete" || args[1] != "0" {
		t.Errorf("delete args %q, %v", args, err)
	}
}

// TestClusterScripts: the cluster's variants of the scripts publish on the sharded channel
// named as the key, and nowhere else; the others keep PUBLISH on "watch:" and the key.
func TestClusterScripts(t *testing.T) {
	for name, src := range map[string]string{"write": scriptSource, "create": createSource, "sync": syncSource} {
		c := clusterScript(src)
		if strings.Contains(c, "'PUBLISH'") || strings.Contains(c, "'watch:' ..") || !strings.Contains(c, "'SPUBLISH', ") {
			t.Errorf("the cluster's %s script does not publish on the sharded channel of the key alone:\n%s", name, c)
		}
		if !strings.Contains(src, "'PUBLISH'") || strings.Contains(src, "SPUBLISH") {
			t.Errorf("the %s script does not publish on a plain channel", name)
		}
	}
	if plainScripts.cluster || !clusterScripts.cluster || plainScripts.write.Hash() == clusterScripts.write.Hash() {
		t.Error("the plain and cluster script sets are not distinct")
	}
}
