//go:build unix

package cloudemu

import (
	"net/http"
	"strings"
	"testing"
)

// Each emulator starts, answers HTTP on its endpoint, and is gone after Close.
func TestEmulatorsStartAndStop(t *testing.T) {
	for _, kind := range []Kind{DynamoDB, S3, GCS, Azure} {
		t.Run(string(kind), func(t *testing.T) {
			e := StartT(t, kind)
			if !strings.HasPrefix(e.Endpoint, "http://127.0.0.1:") {
				t.Fatalf("endpoint %q is not on loopback", e.Endpoint)
			}
			resp, err := http.Get(e.Endpoint + "/")
			if err != nil {
				t.Fatalf("%s does not answer HTTP: %v\n%s", kind, err, e.Log())
			}
			resp.Body.Close()
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			if e.Member.Running() {
				t.Fatalf("%s still runs after Close", kind)
			}
			if _, err := http.Get(e.Endpoint + "/"); err == nil {
				t.Fatalf("%s still answers after Close", kind)
			}
		})
	}
}

// Without the installation directory, Start says how to install the emulators.
func TestStartWithoutEmulators(t *testing.T) {
	t.Setenv(Env, "")
	_, err := Start(t.Context(), S3, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "scripts/cloud-emulators") {
		t.Fatalf("Start without %s = %v; want an error naming scripts/cloud-emulators", Env, err)
	}
}
