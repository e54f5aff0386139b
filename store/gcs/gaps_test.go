package gcs

import (
	"io"
	"testing"

	"cloud.google.com/go/storage"
)

// TestEmulatorGaps shows the gap of fake-gcs-server that internal/cloudemu's shim closes: it
// deletes an object on a DELETE whose ifGenerationMatch names a generation the object no
// longer has, where Cloud Storage answers 412 Precondition Failed. When this test fails, the
// emulator has closed the gap, and the shim's conditional delete can go.
func TestEmulatorGaps(t *testing.T) {
	t.Parallel()
	e := emulator(t)
	bucket := newBucket(t, e.RawEndpoint)
	o := adminClient(t, e.RawEndpoint).Bucket(bucket).Object("k")
	put := func(cond storage.Conditions, s string) int64 {
		w := o.If(cond).NewWriter(t.Context())
		io.WriteString(w, s)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return w.Attrs().Generation
	}
	old := put(storage.Conditions{DoesNotExist: true}, "1")
	put(storage.Conditions{GenerationMatch: old}, "2")
	err := o.If(storage.Conditions{GenerationMatch: old}).Delete(t.Context())
	if code := statusCode(err); code == 412 {
		t.Fatalf("the emulator now refuses a delete on a stale generation (412): remove the shim's conditional delete")
	}
	if err != nil {
		t.Fatalf("delete on a stale generation: %v", err)
	}
	t.Logf("fake-gcs-server deleted the object on a stale generation (Cloud Storage answers 412)")
}
