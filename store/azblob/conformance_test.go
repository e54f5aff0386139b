package azblob

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// TestConformance runs the store suite (T1–T5) against Azurite.
func TestConformance(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	storetest.Run(t, func(*testing.T) store.Store { return s })
}

// TestOpenByURL checks that importing the package registers the azblob scheme (T4), and that
// the store opened by store.Open is this package's, on the URL's container and prefix.
func TestOpenByURL(t *testing.T) {
	t.Parallel()
	if !slices.Contains(store.Schemes(), Scheme) {
		t.Fatalf("scheme %s is not registered: %v", Scheme, store.Schemes())
	}
	raw, name := testURL(t)
	s, err := store.Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	as, ok := s.(*Store)
	if !ok {
		t.Fatalf("store.Open returned a %T", s)
	}
	if as.Container() != name || as.Prefix() != "leases/" {
		t.Errorf("container %q, prefix %q; want %q, %q", as.Container(), as.Prefix(), name, "leases/")
	}
	if !strings.HasSuffix(as.Client().URL(), "/"+name) {
		t.Errorf("client URL %q is not the container's", as.Client().URL())
	}
}

// TestMissingContainer: the store never creates a container; a missing one is a configuration
// error naming it, at Open.
func TestMissingContainer(t *testing.T) {
	t.Parallel()
	raw, name := testURL(t)
	missing := strings.Replace(raw, name, name+"-gone", 1)
	_, err := Open(t.Context(), missing)
	t.Log(err)
	if !errors.Is(err, ErrContainerNotFound) || !strings.Contains(err.Error(), `"`+name+`-gone"`) || !errors.Is(err, store.ErrConfig) {
		t.Errorf("Open on a missing container: %v, want ErrContainerNotFound naming it, a configuration error", err)
	}
	if _, err := adminClient(t, emulator(t), name+"-gone").GetProperties(t.Context(), nil); err == nil {
		t.Error("Open created the missing container")
	}
}

// TestContainerDeletedUnderTheStore: a container deleted after Open makes each operation fail
// with an error naming it, not ErrNotFound (which would let an instance take a lease in a
// store that does not exist).
func TestContainerDeletedUnderTheStore(t *testing.T) {
	t.Parallel()
	e := emulator(t)
	name := newContainer(t, e)
	s := openRaw(t, emulatorURL(name, "", map[string][]string{"connection_string_env": {connEnv}}))
	if _, err := adminClient(t, e, name).Delete(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	_, err := s.Get(t.Context(), "k")
	if !errors.Is(err, ErrContainerNotFound) || errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), name) {
		t.Errorf("Get in a deleted container: %v, want ErrContainerNotFound naming it", err)
	}
	err = s.Create(t.Context(), "k", map[string]any{"a": 1})
	if !errors.Is(err, ErrContainerNotFound) || !strings.Contains(err.Error(), name) {
		t.Errorf("Create in a deleted container: %v, want ErrContainerNotFound naming it", err)
	}
}

// TestStoredUnderEncodedKey checks where a document lands: the blob PREFIX + escaped key +
// ".json" of the URL's container, holding the document's JSON.
func TestStoredUnderEncodedKey(t *testing.T) {
	t.Parallel()
	raw, name := testURL(t)
	s := openRaw(t, raw)
	if err := s.Create(t.Context(), "cluster:leader", map[string]any{"holder": "a"}); err != nil {
		t.Fatal(err)
	}
	if got := s.BlobName("cluster:leader"); got != "leases/cluster=3Aleader.json" {
		t.Errorf("BlobName = %q", got)
	}
	resp, err := adminClient(t, emulator(t), name).NewBlobClient("leases/cluster=3Aleader.json").DownloadStream(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if string(b) != `{"holder":"a"}` {
		t.Errorf("stored blob = %s", b)
	}
	if resp.ContentType == nil || *resp.ContentType != "application/json" {
		t.Errorf("content type = %v", resp.ContentType)
	}
}

// TestRetryWhileConditionHolds: conditional patches whose condition holds succeed however
// often other writers change the blob's ETag, none lost (T2); see
// storetest.RetryWhileConditionHolds.
func TestRetryWhileConditionHolds(t *testing.T) {
	t.Parallel()
	storetest.RetryWhileConditionHolds(t, openTest(t))
}

// TestKeys: EncodeKey is reversible, and its output holds only letters, digits, '-', '_' and
// '=' (no '/', '.' or other character a blob name treats specially).
func TestKeys(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"a", "cluster:leader", "a/b/../c.", "é✓😀", "=3A", "x\x00y", strings.Repeat("z", 300), " "} {
		e := EncodeKey(k)
		if strings.Trim(e, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=") != "" {
			t.Errorf("EncodeKey(%q) = %q holds other characters", k, e)
		}
		d, err := DecodeKey(e)
		if err != nil || d != k {
			t.Errorf("DecodeKey(EncodeKey(%q)) = %q, %v", k, d, err)
		}
	}
	if EncodeKey("a:b") == EncodeKey("a=3Ab") {
		t.Error("EncodeKey is not injective")
	}
	for _, bad := range []string{"=", "=4", "=ZZ"} {
		if _, err := DecodeKey(bad); err == nil {
			t.Errorf("DecodeKey(%q) succeeded", bad)
		}
	}
}

// TestKeyTooLong: a key whose blob name would pass Azure's 1024 bytes is refused as invalid,
// before any request.
func TestKeyTooLong(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	key := strings.Repeat(":", 400) // 1200 bytes escaped
	if err := s.Create(t.Context(), key, map[string]any{"a": 1}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Create with a too long key: %v, want ErrInvalid", err)
	}
	if _, err := s.Get(t.Context(), key); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Get with a too long key: %v, want ErrInvalid", err)
	}
}
