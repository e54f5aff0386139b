//go:build unix

package cloudemu

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
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

// dynalite outlives a client that closes its connection in the middle of a request, as
// DynamoDB does; without its hook it exits.
func TestDynaliteSurvivesAbortedRequest(t *testing.T) {
	e := StartT(t, DynamoDB)
	c, err := net.Dial("tcp", e.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\nX-Amz-Target: DynamoDB_20120810.ListTables\r\n\r\n{\"a\"")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	// The hook logs the drop: wait for that line, then check the server still answers.
	for !strings.Contains(e.Log(), "aborted by its client was dropped") {
		if !e.Member.Running() {
			t.Fatalf("dynalite exited after an aborted request:\n%s", e.Log())
		}
		time.Sleep(10 * time.Millisecond)
	}
	resp, err := http.Get(e.Endpoint + "/")
	if err != nil {
		t.Fatalf("dynalite does not answer after an aborted request: %v\n%s", err, e.Log())
	}
	resp.Body.Close()
}
