package leasehold

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
)

// V1 through the service: the parameter advertise is published in the record while the
// instance leads; one of two lines is refused with an error naming the service and the
// parameter.
func TestStoreClusterServiceAdvertise(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		app := newApp(t, `{"services": {"Registry": {"type": "test/JournaledStore"}, "cluster": {"type": "StoreClusterService", "leaseName": "api", "instanceId": "me", "advertise": "http://10.0.0.7:8080"}}}`)
		resetJournal(t)
		app.SetLogger(discardLogger())
		if err := app.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		doc, err := app.Registry().Get(context.Background(), "cluster:api")
		if err != nil {
			t.Fatal(err)
		}
		if doc["holder"] != "me" || doc["value"] != "http://10.0.0.7:8080" || doc["valueTerm"] != doc["term"] {
			t.Fatalf("record %v; want holder me publishing its value for its term", doc)
		}
		if err := app.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
	app := newApp(t, `{"services": {"cluster": {"type": "StoreClusterService", "advertise": "a\nb"}}}`)
	app.SetLogger(discardLogger())
	err := app.Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), `service "cluster"`) || !strings.Contains(err.Error(), `parameter "advertise": the value must be one line`) {
		t.Fatalf("Start with a value of two lines: %v; want an error naming the service and the parameter", err)
	}
}
