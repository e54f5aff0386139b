package gcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/foreigndoc"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/store"
)

// TestOpenByURL checks that importing the package registers the gs scheme (T4), and the
// accessors of the store store.Open returns.
func TestOpenByURL(t *testing.T) {
	t.Parallel()
	if !slices.Contains(store.Schemes(), "gs") {
		t.Fatalf("scheme gs is not registered: %v", store.Schemes())
	}
	e := emulator(t)
	bucket := newBucket(t, e.Endpoint)
	raw := storeURL(e.Endpoint, bucket, "a/b")
	s, err := store.Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	gs, ok := s.(*Store)
	if !ok {
		t.Fatalf("store.Open(%q) returned a %T", raw, s)
	}
	if gs.BucketName() != bucket || gs.Prefix() != "a/b/" || gs.Client() == nil || gs.Bucket().BucketName() != bucket {
		t.Errorf("bucket %q, prefix %q, want %q and %q", gs.BucketName(), gs.Prefix(), bucket, "a/b/")
	}
	if got := gs.ObjectName("cluster:leader"); got != "a/b/cluster%3Aleader" {
		t.Errorf("ObjectName = %q", got)
	}
}

// TestMissingBucket: the store never creates a bucket; a missing one is a configuration error
// naming it.
func TestMissingBucket(t *testing.T) {
	t.Parallel()
	e := emulator(t)
	_, err := Open(t.Context(), storeURL(e.Endpoint, "no-such-bucket-here", ""))
	t.Logf("error: %v", err)
	if !errors.Is(err, ErrBucketNotFound) || !strings.Contains(err.Error(), `"no-such-bucket-here"`) || !errors.Is(err, store.ErrConfig) {
		t.Errorf("Open on a missing bucket: %v, want ErrBucketNotFound naming it, a configuration error", err)
	}
}

// TestStoredUnderEncodedKey checks where a document lands: as JSON, in the object named by the
// prefix (the URL's path) and the encoded key, or by the key alone without a prefix.
func TestStoredUnderEncodedKey(t *testing.T) {
	t.Parallel()
	e := emulator(t)
	bucket := newBucket(t, e.Endpoint)
	admin := adminClient(t, e.Endpoint)
	for prefix, name := range map[string]string{"leases/": "leases/cluster%3Aleader%2F1", "": "cluster%3Aleader%2F1", "x/y": "x/y/cluster%3Aleader%2F1"} {
		s := mustOpen(t, storeURL(e.Endpoint, bucket, prefix))
		if err := s.Create(t.Context(), "cluster:leader/1", map[string]any{"holder": "a"}); err != nil {
			t.Fatal(err)
		}
		r, err := admin.Bucket(bucket).Object(name).NewReader(t.Context())
		if err != nil {
			t.Fatalf("prefix %q: object %q: %v", prefix, name, err)
		}
		b, _ := io.ReadAll(r)
		r.Close()
		if string(b) != `{"holder":"a"}` || r.Attrs.ContentType != "application/json" {
			t.Errorf("prefix %q: object %q holds %s (%s)", prefix, name, b, r.Attrs.ContentType)
		}
	}
}

// TestKeys: EncodeKey is reversible and leaves only letters, digits, '-', '_' and escapes.
func TestKeys(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"cluster:leader", "a/b", ".", "..", "%41", "é", "a b#[]*?", "x\x00y"} {
		enc := EncodeKey(k)
		if strings.ContainsAny(enc, "/.:#[]*? ") {
			t.Errorf("EncodeKey(%q) = %q", k, enc)
		}
		if dec, err := DecodeKey(enc); err != nil || dec != k {
			t.Errorf("DecodeKey(EncodeKey(%q)) = %q, %v", k, dec, err)
		}
	}
	for _, bad := range []string{"%4", "%zz", "%4a", "a.b"} {
		if _, err := DecodeKey(bad); err == nil {
			t.Errorf("DecodeKey(%q) succeeded", bad)
		}
	}
}

// TestKeyTooLong: a key whose object name would pass GCS's 1024 bytes is ErrInvalid.
func TestKeyTooLong(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	key := strings.Repeat(":", 400) // 1200 bytes encoded
	if err := s.Create(t.Context(), key, map[string]any{"a": 1}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Create of a key of %d encoded bytes: %v, want ErrInvalid", len(EncodeKey(key)), err)
	}
	if _, err := s.Get(t.Context(), key); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Get of a key of %d encoded bytes: %v, want ErrInvalid", len(EncodeKey(key)), err)
	}
}

// TestNotJSON checks that an object holding something this store did not write is an error
// naming the key, for every operation, and is left as it is.
func TestNotJSON(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	for i, raw := range []string{"not json", "[1,2]", "null", `"text"`, `{"a":1} trailing`, "42", ""} {
		key := fmt.Sprintf("bad:%d", i)
		o := s.admin.Bucket(s.bucket).Object(s.ObjectName(key))
		w := o.NewWriter(t.Context())
		io.WriteString(w, raw)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		foreigndoc.Value(t, s, key, raw, ErrNotJSON)
		r, err := o.NewReader(t.Context())
		if err != nil {
			t.Fatalf("%q holding %q: %v", key, raw, err)
		}
		b, _ := io.ReadAll(r)
		r.Close()
		if string(b) != raw {
			t.Errorf("%q holding %q changed to %q", key, raw, b)
		}
	}
}

// TestEmulatorHostEnv: without an endpoint parameter, STORAGE_EMULATOR_HOST (the client
// library's convention) sends the requests to that host, without credentials.
func TestEmulatorHostEnv(t *testing.T) {
	e := emulator(t)
	bucket := newBucket(t, e.Endpoint)
	t.Setenv(EmulatorHostEnv, e.Addr)
	s := mustOpen(t, "gs://"+bucket+"/p")
	if err := s.Create(t.Context(), "k", map[string]any{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := adminClient(t, e.Endpoint).Bucket(bucket).Object("p/k").Attrs(t.Context()); err != nil {
		t.Errorf("the document is not in the emulator: %v", err)
	}
}

// TestNoCredentials: without an emulator and without usable application default credentials,
// Open fails with a configuration error naming the bucket.
func TestNoCredentials(t *testing.T) {
	t.Setenv(EmulatorHostEnv, "")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", t.TempDir()+"/no-such-file.json")
	for _, raw := range []string{"gs://some-bucket/p", "gs://some-bucket/p?endpoint=https://127.0.0.1:1&anonymous=false"} {
		_, err := Open(t.Context(), raw)
		t.Logf("error: %v", err)
		if err == nil || !strings.Contains(err.Error(), `"some-bucket"`) || !errors.Is(err, store.ErrConfig) {
			t.Errorf("Open(%s) without credentials: %v, want a configuration error naming the bucket", raw, err)
		}
	}
}

// TestUnreachable: an endpoint nothing listens on fails Open by open_timeout, with an error
// that is not a configuration error (the service may come up: C7).
func TestUnreachable(t *testing.T) {
	t.Parallel()
	addr := testenv.ClosedPort(t)
	_, err := Open(context.Background(), "gs://some-bucket?open_timeout=300ms&endpoint=http://"+addr)
	t.Logf("error: %v", err)
	if err == nil || !strings.Contains(err.Error(), `"some-bucket"`) || !store.NotReady(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Open on a closed port: %v, want an error naming the bucket, wrapping the deadline, not a configuration error", err)
	}
}

// TestOpenTimeout: a server that accepts connections and never answers fails Open by
// open_timeout when Open's context has no deadline.
func TestOpenTimeout(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // silent until the test ends
		}
	}()
	_, err = Open(context.Background(), "gs://some-bucket?open_timeout=200ms&endpoint=http://"+l.Addr().String())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Open on a silent server: %v, want context.DeadlineExceeded", err)
	}
}

// TestRenewIntervalBound: an election over the store with R under a second is refused, naming
// the store and the reason; R = 1s is accepted.
func TestRenewIntervalBound(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	_, err := cluster.NewElector(cluster.ElectorConfig{Lock: cluster.NewStoreLock(s.Store), LeaseDuration: 5 * time.Second, RenewInterval: 500 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "store/gcs") || !strings.Contains(err.Error(), "one write per second") {
		t.Errorf("R=500ms: %v, want an error naming store/gcs and the reason", err)
	}
	if _, err := cluster.NewElector(cluster.ElectorConfig{Lock: cluster.NewStoreLock(s.Store), LeaseDuration: 5 * time.Second, RenewInterval: time.Second}); err != nil {
		t.Errorf("R=1s: %v", err)
	}
}
