package sqlite

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
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

// TestServiceType: Webda/SQLiteStore is registered, decodes its parameters strictly, opens the
// store in Init without an application, works as a store.Store, and closes it in Stop.
func TestServiceType(t *testing.T) {
	t.Parallel()
	if !slices.Contains(leasehold.ServiceTypes(), "Webda/SQLiteStore") {
		t.Fatalf("Webda/SQLiteStore is not among the service types %v", leasehold.ServiceTypes())
	}
	params, _ := json.Marshal(map[string]string{"url": fileURL(t, ""), "table": "mine"})
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
	if got := svc.Store().Table(); got != "mine" {
		t.Errorf("table = %q, want mine", got)
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

// TestServiceParams: bad parameters fail in decoding or Init with errors naming the parameter.
func TestServiceParams(t *testing.T) {
	t.Parallel()
	if _, err := decodeService(t, `{"url": "sqlite:///x", "path": "/x"}`); err == nil || !strings.Contains(err.Error(), "path") {
		t.Errorf("unknown parameter: %v, want an error naming path", err)
	}
	dir := t.TempDir()
	for _, c := range []struct{ params, want string }{
		{`{}`, `parameter "url" is required`},
		{`{"url": "sqlite://` + dir + `/x.db", "table": "no-dash"}`, "parameter table"},
		{`{"url": "sqlite://relative.db"}`, `parameter "url"`},
		{`{"url": "mem://"}`, `parameter "url"`},
		{`{"url": "sqlite://` + filepath.Join(dir, "missing", "x.db") + `"}`, `parameter "url"`},
	} {
		svc, err := decodeService(t, c.params)
		if err != nil {
			t.Fatalf("decode %s: %v", c.params, err)
		}
		err = svc.Init(t.Context(), nil)
		if err == nil {
			svc.Stop(t.Context())
			t.Errorf("Init with %s succeeded", c.params)
			continue
		}
		t.Log(err)
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Init: error %q does not name parameter %s", err, c.want)
		}
	}
}

// TestServiceInApplication: the type works as an application's Registry, configured by JSON.
func TestServiceInApplication(t *testing.T) {
	t.Parallel()
	cfgJSON, _ := json.Marshal(map[string]any{"services": map[string]any{
		"Registry": map[string]any{"type": "SQLiteStore", "url": fileURL(t, "")},
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
	t.Cleanup(func() {
		if err := app.Stop(t.Context()); err != nil {
			t.Error(err)
		}
	})
	svc, ok := app.Service("Registry")
	if !ok {
		t.Fatal("no Registry service")
	}
	ss, ok := svc.(*Service)
	if !ok {
		t.Fatalf("Registry is a %T, want *sqlite.Service", svc)
	}
	if app.Registry() == nil {
		t.Fatal("app.Registry() is nil")
	}
	if err := app.Registry().Create(t.Context(), "k", map[string]any{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := ss.Store().Get(t.Context(), "k"); err != nil {
		t.Errorf("the Registry's document is not in the service's file: %v", err)
	}
}
