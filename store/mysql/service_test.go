package mysql

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/store"
)

// decodeService decodes a service's parameters as the application does: strictly.
func decodeService(t *testing.T, params string) (*Service, error) {
	t.Helper()
	svc := &Service{}
	dec := json.NewDecoder(bytes.NewReader([]byte(params)))
	dec.DisallowUnknownFields()
	return svc, dec.Decode(svc)
}

// TestServiceType: Webda/MySQLStore is registered, decodes its parameters strictly, opens the
// store in Init without an application, works as a store.Store, and closes it in Stop.
func TestServiceType(t *testing.T) {
	t.Parallel()
	if !contains(leasehold.ServiceTypes(), "Webda/MySQLStore") {
		t.Fatalf("Webda/MySQLStore is not among the service types %v", leasehold.ServiceTypes())
	}
	table := tableName(t)
	params, _ := json.Marshal(map[string]string{"url": serverURL(t), "table": table})
	svc, err := decodeService(t, string(params))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Get(t.Context(), "k"); err == nil || !strings.Contains(err.Error(), "not initialized") {
		t.Errorf("Get before Init: %v, want an error saying the service is not initialized", err)
	}
	if err := svc.Init(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	opened := svc.Store()
	t.Cleanup(func() { opened.Close(); dropTable(t, opened.Table()) })
	if got := svc.Store().Table(); got != table {
		t.Errorf("table = %q, want %q", got, table)
	}
	var st store.Store = svc
	if err := st.Create(t.Context(), "k", map[string]any{"rev": 1}); err != nil {
		t.Fatal(err)
	}
	if err := st.Patch(t.Context(), "k", map[string]any{"rev": 2}, &store.Condition{Field: "rev", Value: 1}); err != nil {
		t.Fatal(err)
	}
	if doc, err := st.Get(t.Context(), "k"); err != nil || doc["rev"] != 2.0 {
		t.Errorf("Get = %v, %v; want rev 2", doc, err)
	}
	if err := st.Delete(t.Context(), "k", nil); err != nil {
		t.Fatal(err)
	}
	if err := svc.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := opened.Get(t.Context(), "k"); err == nil {
		t.Error("Get on the stopped store succeeded")
	}
	if _, err := svc.Get(t.Context(), "k"); err == nil || !strings.Contains(err.Error(), "not initialized") {
		t.Errorf("Get after Stop: %v, want an error saying the service is not initialized", err)
	}
}

// TestServiceParams: bad parameters fail in decoding or Init with errors naming the parameter
// and never the password.
func TestServiceParams(t *testing.T) {
	t.Parallel()
	if _, err := decodeService(t, `{"url": "mysql://x", "tabel": "t"}`); err == nil || !strings.Contains(err.Error(), "tabel") {
		t.Errorf("unknown parameter: %v, want an error naming tabel", err)
	}
	for _, c := range []struct{ params, want string }{
		{`{}`, `parameter "url" is required`},
		{`{"url": "mysql://u:` + secret + `@127.0.0.1:1/db", "table": "no-dash"}`, "parameter table"},
		{`{"url": "redis://u:` + secret + `@127.0.0.1:1/0"}`, `parameter "url"`},
		{`{"url": "mysql://u:` + secret + `@127.0.0.1:1/db"}`, `parameter "url"`},
		{`{"url": "://u:` + secret + `@x"}`, `parameter "url"`},
	} {
		svc, err := decodeService(t, c.params)
		if err != nil {
			t.Fatalf("decode %s: %v", c.params, err)
		}
		err = svc.Init(t.Context(), nil)
		if err == nil {
			svc.Stop(t.Context())
			t.Errorf("Init with %s succeeded", store.RedactString(c.params))
			continue
		}
		t.Log(err)
		if strings.Contains(err.Error(), secret) {
			t.Errorf("Init: error reveals the password: %v", err)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Init: error %q does not name parameter %s", err, c.want)
		}
	}
}

// TestServiceInApplication: the type works as an application's Registry, configured by JSON.
func TestServiceInApplication(t *testing.T) {
	t.Parallel()
	table := tableName(t)
	cfgJSON, _ := json.Marshal(map[string]any{"services": map[string]any{
		"Registry": map[string]any{"type": "Webda/MySQLStore", "url": serverURL(t), "table": table},
	}})
	cfg, err := leasehold.ParseConfig(cfgJSON)
	if err != nil {
		t.Fatal(err)
	}
	app, err := leasehold.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	svc, ok := app.Service("Registry")
	if !ok {
		t.Fatal("no Registry service")
	}
	ps, ok := svc.(*Service)
	if !ok {
		t.Fatalf("Registry is a %T, want *mysql.Service", svc)
	}
	opened := ps.Store() // nil once the application stops
	t.Cleanup(func() {
		if err := app.Stop(t.Context()); err != nil {
			t.Error(err)
		}
		dropTable(t, opened.Table())
	})
	if app.Registry() == nil {
		t.Fatal("app.Registry() is nil")
	}
	if err := app.Registry().Create(t.Context(), "k", map[string]any{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := ps.Store().Get(t.Context(), "k"); err != nil {
		t.Errorf("the Registry's document is not in the service's table: %v", err)
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
