//go:build unix

package cloudemu

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// gcsCall makes one JSON API request and returns its status and decoded body.
func gcsCall(t *testing.T, method, u, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

// Through the shim, a delete conditioned on a generation the object no longer has is refused
// with 412, as Cloud Storage refuses it, and one on its current generation deletes it; the
// emulator alone deletes on any generation.
func TestGCSShimConditionalDelete(t *testing.T) {
	e := StartT(t, GCS)
	const shimmed, raw = "shimmed", "raw"
	for _, b := range []string{shimmed, raw} {
		if err := e.CreateGCSBucket(t.Context(), b); err != nil {
			t.Fatal(err)
		}
	}
	put := func(ep, bucket string) int64 {
		code, m := gcsCall(t, "POST", ep+"/upload/storage/v1/b/"+bucket+"/o?uploadType=media&name=k", `{"n":1}`)
		if code != http.StatusOK {
			t.Fatalf("upload: %d %v", code, m)
		}
		g, err := strconv.ParseInt(m["generation"].(string), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	del := func(ep, bucket string, gen int64) int {
		code, _ := gcsCall(t, "DELETE", ep+"/storage/v1/b/"+bucket+"/o/k?ifGenerationMatch="+strconv.FormatInt(gen, 10), "")
		return code
	}
	old := put(e.Endpoint, shimmed)
	cur := put(e.Endpoint, shimmed)
	if old == cur {
		t.Fatalf("two uploads got one generation %d", old)
	}
	if code := del(e.Endpoint, shimmed, old); code != http.StatusPreconditionFailed {
		t.Fatalf("delete on a stale generation through the shim answered %d, want 412", code)
	}
	if code := del(e.Endpoint, shimmed, cur); code != http.StatusNoContent && code != http.StatusOK {
		t.Fatalf("delete on the current generation through the shim answered %d, want 204", code)
	}
	if code := del(e.Endpoint, shimmed, cur); code != http.StatusNotFound {
		t.Fatalf("delete of a missing object through the shim answered %d, want 404", code)
	}
	// The gap the shim closes, on the emulator alone: if this fails, fake-gcs-server checks the
	// condition itself, and the shim's conditional delete can go.
	old = put(e.RawEndpoint, raw)
	put(e.RawEndpoint, raw)
	if code := del(e.RawEndpoint, raw, old); code == http.StatusPreconditionFailed {
		t.Fatalf("fake-gcs-server now refuses a delete on a stale generation: drop the shim's conditional delete")
	}
}
