package leasehold

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

// The priority and health parameters of the cluster services: decoded as the other
// parameters (durations as milliseconds or Go durations), handed to the Elector, and the
// priority written in the record the instance holds, for its term.
func TestStoreClusterServicePriorityParams(t *testing.T) {
	app := newApp(t, `{"services": {"cluster": {"type": "Webda/StoreClusterService", "renewInterval": 500,
		"priority": -3, "stabilityWindow": "30s", "healthCommand": "exit 0", "healthTimeout": 400, "healthFailures": 5}}}`)
	es, ok := app.ElectionService()
	if !ok {
		t.Fatal("no election service")
	}
	if es.Priority != -3 || es.StabilityWindow.D() != 30*time.Second || es.HealthCommand != "exit 0" ||
		es.HealthTimeout.D() != 400*time.Millisecond || es.HealthFailures != 5 || es.HealthURL != "" {
		t.Fatalf("parameters decoded as %+v", es)
	}
	if err := es.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	var cfg cluster.ElectorConfig
	es.RankConfig(&cfg)
	if cfg.Priority != -3 || cfg.StabilityWindow != 30*time.Second || cfg.HealthTimeout != 400*time.Millisecond ||
		cfg.HealthFailures != 5 || cfg.Health == nil {
		t.Fatalf("ElectorConfig of the parameters: %+v", cfg)
	}
	if err := cfg.Health(t.Context()); err != nil {
		t.Errorf("healthCommand \"exit 0\" fails: %v", err)
	}
	es.HealthCommand = "exit 3"
	if err := es.HealthCheck()(t.Context()); err == nil {
		t.Error(`healthCommand "exit 3" passes`)
	}
	es.HealthCommand, es.HealthURL = "", "http://127.0.0.1:1/healthz"
	if es.HealthCheck() == nil {
		t.Error("healthUrl gives no check")
	}
	es.HealthURL = ""
	if es.HealthCheck() != nil {
		t.Error("a check without healthCommand or healthUrl")
	}

	synctest.Test(t, func(t *testing.T) {
		app := newApp(t, `{"services": {"Registry": {"type": "test/JournaledStore"}, "cluster": {"type": "StoreClusterService", "leaseName": "api", "instanceId": "me", "priority": 7}}}`)
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
		if doc["holder"] != "me" || doc["priority"] != float64(7) || doc["priorityTerm"] != doc["term"] || doc["unhealthy"] != false {
			t.Fatalf("record %v; want holder me of priority 7 for its term, healthy", doc)
		}
		if err := app.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// Each bad priority or health parameter is an error naming the service and the parameter, at
// New (the JSON decoding) or at Start (Validate); a password in a URL is never shown.
func TestPriorityHealthParamErrors(t *testing.T) {
	for _, tc := range []struct {
		name, params string
		want         []string
	}{
		{"priority out of 32 bits", `"priority": 3000000000`, []string{`parameter "priority" is 3000000000, want a 32-bit integer`}},
		{"priority not a number", `"priority": "high"`, []string{`parameter "priority": want a number, got string`}},
		{"priority not an integer", `"priority": 1.5`, []string{`parameter "priority"`}},
		{"negative stabilityWindow", `"stabilityWindow": "-1s"`, []string{`parameter "stabilityWindow"`, "negative duration"}},
		{"unparsable stabilityWindow", `"stabilityWindow": "soon"`, []string{`parameter "stabilityWindow"`, `invalid duration "soon"`}},
		{"negative healthFailures", `"healthCommand": "true", "healthFailures": -1`, []string{`parameter "healthFailures" is -1`}},
		{"healthTimeout above renewInterval", `"renewInterval": 500, "healthCommand": "true", "healthTimeout": "600ms"`,
			[]string{`parameter "healthTimeout" 600ms exceeds the renew interval 500ms`}},
		{"healthTimeout above the default renewInterval", `"healthUrl": "http://127.0.0.1:8080/healthz", "healthTimeout": "6s"`,
			[]string{`parameter "healthTimeout" 6s exceeds the renew interval 5s`}},
		{"both checks", `"healthCommand": "true", "healthUrl": "http://127.0.0.1:8080/healthz"`,
			[]string{`parameters "healthCommand" and "healthUrl" cannot be used together`}},
		{"blank healthCommand", `"healthCommand": "  "`, []string{`parameter "healthCommand" is blank`}},
		{"healthUrl of another scheme", `"healthUrl": "ftp://127.0.0.1/healthz"`, []string{`parameter "healthUrl" ftp://127.0.0.1/healthz: the scheme must be http or https`}},
		{"healthUrl without a host", `"healthUrl": "http:///healthz"`, []string{`parameter "healthUrl"`, "no host"}},
		{"healthUrl with a password, unparsable", `"healthUrl": "http://user:s3cret@host:port:bad/"`, []string{`parameter "healthUrl": cannot parse the URL`}},
		{"healthUrl of another scheme, with a password", `"healthUrl": "ftp://user:s3cret@127.0.0.1/"`, []string{`parameter "healthUrl"`, "http or https"}},
		{"healthTimeout without a check", `"healthTimeout": "1s"`, []string{`parameter "healthTimeout" is set without a health check`}},
		{"healthFailures without a check", `"healthFailures": 2`, []string{`parameter "healthFailures" is set without a health check`}},
		{"healthUrl misspelled", `"healthURL": "http://127.0.0.1/"`, []string{`unknown parameter "healthURL"`, `did you mean "healthUrl"?`}},
		{"healthCommand of the wrong type", `"healthCommand": ["true"]`, []string{`parameter "healthCommand": want a string`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(`{"services": {"cluster": {"type": "StoreClusterService", ` + tc.params + `}}}`))
			if err != nil {
				t.Fatal(err)
			}
			app, err := New(cfg)
			if err == nil {
				app.SetLogger(discardLogger())
				err = app.Start(t.Context())
				if err == nil {
					_ = app.Stop(context.Background())
				}
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append(tc.want, `service "cluster"`) {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("error %q shows the password", err)
			}
		})
	}
}
