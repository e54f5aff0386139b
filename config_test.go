package leasehold

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A1: the keys of "services" keep their order, which is the order of creation and Init.
func TestA1ServiceOrder(t *testing.T) {
	j := resetJournal(t)
	app := newApp(t, `{"services": {
		"zeta": {"type": "test/Recorder", "name": "zeta"},
		"alpha": {"type": "test/Recorder", "name": "alpha"},
		"mid": {"type": "test/Recorder", "name": "mid"}}}`)
	ctx := t.Context()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := app.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"init zeta", "init alpha", "init mid", "stop mid", "stop alpha", "stop zeta"}
	if got := j.get(); !reflect.DeepEqual(got, want) {
		t.Fatalf("journal %v; want %v", got, want)
	}
}

// A1: ParseConfig keeps the order and the parameters.
func TestA1ParseConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"version": 3, "services": {"b": {"type": "X", "p": 1}, "a": {"type": "Webda/Y"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Services) != 2 || cfg.Services[0].Name != "b" || cfg.Services[0].Type != "X" || cfg.Services[1].Name != "a" || cfg.Services[1].Type != "Webda/Y" {
		t.Fatalf("services %+v; want b (X) then a (Webda/Y)", cfg.Services)
	}
}

// A2: with or without the Webda/ namespace, durations as milliseconds or Go strings, strict
// parameters.
func TestA2TypesAndDurations(t *testing.T) {
	for _, typ := range []string{"StoreClusterService", "Webda/StoreClusterService"} {
		app := newApp(t, `{"services": {"cluster": {"type": "`+typ+`", "leaseDuration": 1500, "renewInterval": "500ms", "leaseName": "jobs", "instanceId": "me"}}}`)
		c, ok := app.Cluster().(*StoreClusterService)
		if !ok {
			t.Fatalf("type %q: cluster is %T", typ, app.Cluster())
		}
		if c.LeaseDuration.D() != 1500*time.Millisecond || c.RenewInterval.D() != 500*time.Millisecond || c.LeaseName != "jobs" || c.InstanceID() != "me" {
			t.Fatalf("type %q: parameters leaseDuration=%v renewInterval=%v leaseName=%q instanceId=%q", typ, c.LeaseDuration.D(), c.RenewInterval.D(), c.LeaseName, c.InstanceID())
		}
	}
}

// A2: each bad input is an error naming the service and the parameter.
func TestA2BadInput(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		want         []string // all in the error
	}{
		{"unknown type", `{"services": {"c": {"type": "Webda/Nope"}}}`,
			[]string{`service "c"`, `unknown type "Webda/Nope"`, "Webda/StoreClusterService", "Webda/MemoryStore"}},
		{"unknown parameter", `{"services": {"c": {"type": "StoreClusterService", "leaseDurationMs": 1}}}`,
			[]string{`service "c" (Webda/StoreClusterService)`, `unknown parameter "leaseDurationMs"`, "leaseDuration"}},
		{"parameter with the wrong case", `{"services": {"c": {"type": "StoreClusterService", "LeaseDuration": 1}}}`,
			[]string{`service "c"`, `unknown parameter "LeaseDuration"`, `did you mean "leaseDuration"`}},
		{"wrong JSON type", `{"services": {"c": {"type": "StoreClusterService", "leaseName": 12}}}`,
			[]string{`service "c"`, `parameter "leaseName"`, "want a string, got number"}},
		{"wrong JSON type, int", `{"services": {"r": {"type": "test/Recorder", "count": "many"}}}`,
			[]string{`service "r"`, `parameter "count"`, "want a number, got string"}},
		{"wrong JSON type, array", `{"services": {"r": {"type": "test/Recorder", "tags": {"a": 1}}}}`,
			[]string{`service "r"`, `parameter "tags"`, "want an array"}},
		{"negative duration", `{"services": {"c": {"type": "StoreClusterService", "leaseDuration": -5}}}`,
			[]string{`service "c"`, `parameter "leaseDuration"`, "negative duration"}},
		{"negative duration string", `{"services": {"c": {"type": "StoreClusterService", "renewInterval": "-1s"}}}`,
			[]string{`service "c"`, `parameter "renewInterval"`, "negative duration"}},
		{"unparsable duration", `{"services": {"c": {"type": "StoreClusterService", "renewInterval": "soon"}}}`,
			[]string{`service "c"`, `parameter "renewInterval"`, `invalid duration "soon"`}},
		{"duration of the wrong type", `{"services": {"c": {"type": "StoreClusterService", "renewInterval": true}}}`,
			[]string{`service "c"`, `parameter "renewInterval"`, "invalid duration true"}},
		{"duplicate parameter", `{"services": {"c": {"type": "StoreClusterService", "leaseName": "a", "leaseName": "b"}}}`,
			[]string{`service "c"`, `parameter "leaseName" appears twice`}},
		{"Registry not a store", `{"services": {"Registry": {"type": "test/Recorder"}}}`,
			[]string{`service "Registry" (Webda/test/Recorder) is not a store`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(tc.config))
			if err == nil {
				_, err = New(cfg)
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// A2: a malformed or ill-shaped document is an error with its position or naming the part at
// fault.
func TestA2MalformedConfig(t *testing.T) {
	for _, tc := range []struct {
		name, config, want string
	}{
		{"syntax error", "{\n  \"services\": {\n    \"c\": {\"type\": \"X\",}\n  }\n}", "line 3, column 23"},
		{"truncated", "{\n  \"services\": {\n    \"c\": {\"type\"", "line 3, column 17: unexpected end of JSON"},
		{"empty", "", "line 1, column 1: unexpected end of JSON"},
		{"not an object", `[1]`, "the configuration must be a JSON object"},
		{"services not an object", `{"services": []}`, `"services" must be a JSON object`},
		{"service not an object", `{"services": {"c": 3}}`, `service "c": want an object with a "type", got a number`},
		{"missing type", `{"services": {"c": {"leaseDuration": 3}}}`, `service "c": missing "type"`},
		{"type not a string", `{"services": {"c": {"type": 3}}}`, `service "c": "type" must be a non-empty string, got 3`},
		{"empty type", `{"services": {"c": {"type": ""}}}`, `service "c": "type" must be a non-empty string`},
		{"duplicate service", `{"services": {"c": {"type": "X"}, "c": {"type": "Y"}}}`, `service "c" is configured twice`},
		{"unknown top-level key", `{"servces": {}}`, `unknown key "servces"`},
		{"trailing data", `{"services": {}} {}`, "data after the configuration object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.config))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseConfig: %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.json")
	if err := os.WriteFile(path, []byte("{\"services\": {\n\"c\": {\"type\": \"X\"}\n,}}"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadConfig(path)
	if err == nil || !strings.Contains(err.Error(), path+": leasehold: config: line 3, column 2") {
		t.Fatalf("LoadConfig: %v; want the path and the position", err)
	}
	if _, err := LoadConfig(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Fatalf("LoadConfig of a missing file: %v", err)
	}
	if err := os.WriteFile(path, []byte(`{"services": {"c": {"type": "Webda/MemoryStore"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path)
	if err != nil || len(cfg.Services) != 1 {
		t.Fatalf("LoadConfig: %+v, %v", cfg, err)
	}
}

func TestRegisterServiceTypeDuplicatePanics(t *testing.T) {
	for _, name := range []string{"Webda/MemoryStore", "MemoryStore", ""} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RegisterServiceType(%q) did not panic", name)
				}
			}()
			RegisterServiceType(name, func() Service { return &MemoryStore{} })
		}()
	}
}

// Only keeps the chosen services in their order (A1), so that a program can build an
// Application of part of a configuration: one whose other services are of types it does not
// link.
func TestConfigOnly(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"services": {
		"poller": {"type": "MyApp/Poller", "interval": "10s"},
		"cluster": {"type": "StoreClusterService", "leaseName": "jobs"},
		"Registry": {"type": "Webda/MemoryStore"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), `unknown type "MyApp/Poller"`) {
		t.Fatalf("New of the whole configuration: %v; want the unknown type", err)
	}
	var names []string
	for _, sc := range cfg.Services {
		if !sc.Registered() {
			names = append(names, sc.Name)
		}
	}
	if !reflect.DeepEqual(names, []string{"poller"}) {
		t.Fatalf("services of unregistered types: %v; want [poller]", names)
	}
	part := cfg.Only(func(sc ServiceConfig) bool { return sc.Registered() })
	if len(part.Services) != 2 || part.Services[0].Name != "cluster" || part.Services[1].Name != "Registry" {
		t.Fatalf("Only: %+v; want cluster then Registry", part.Services)
	}
	if len(cfg.Services) != 3 {
		t.Fatalf("Only changed the configuration it was called on: %+v", cfg.Services)
	}
	app, err := New(part)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := app.Cluster().(*StoreClusterService); !ok || c.LeaseName != "jobs" {
		t.Fatalf("cluster of the part: %T %+v", app.Cluster(), app.Cluster())
	}
	for _, tc := range []struct {
		typ, name string
		want      bool
	}{
		{"StoreClusterService", "Webda/StoreClusterService", true},
		{"Webda/StoreClusterService", "StoreClusterService", true},
		{" Webda/StoreClusterService", "Webda/StoreClusterService", true},
		{"Webda/MemoryStore", "Webda/StoreClusterService", false},
		{"MyApp/Poller", "Poller", false},
	} {
		if got := (ServiceConfig{Type: tc.typ}).HasType(tc.name); got != tc.want {
			t.Errorf("ServiceConfig{Type: %q}.HasType(%q) = %v, want %v", tc.typ, tc.name, got, tc.want)
		}
	}
}
