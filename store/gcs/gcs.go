package gcs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// ServiceType is the service type configurations name to open a [Store] from the parameters
// url and prefix (see the package documentation).
const ServiceType = "Webda/GCSStore"

func init() {
	store.Register(store.Backend{
		Schemes:     []string{"gs"},
		Open:        driver.Opener(openURL),
		ServiceType: ServiceType,
		Example:     "gs://BUCKET/PREFIX",
		Params:      []string{"endpoint", "anonymous"},
	})
}

// Permissions are the Cloud Storage IAM permissions of the requests the store makes, and no
// more: objects.get (Get, and the read before every write), objects.create (Create, Patch),
// objects.delete (Delete, and Patch, which replaces an object: GCS asks for delete on the
// object a write overwrites) and objects.list (Open's check of the bucket). docs/backends.md
// gives them as a custom role.
var Permissions = []string{
	"storage.objects.create",
	"storage.objects.delete",
	"storage.objects.get",
	"storage.objects.list",
}

// ErrNotJSON means an object under the prefix holds something that is not a JSON object:
// something other than this store wrote it. It is left as it is.
var ErrNotJSON = errors.New("store/gcs: object is not a JSON object")

// ErrBucketNotFound means the URL's bucket does not exist (the store never creates buckets).
var ErrBucketNotFound = errors.New("store/gcs: bucket does not exist")

// Store is a store.Store on the objects of a Cloud Storage bucket under a prefix. It is safe
// for concurrent use.
type Store struct {
	*driver.Portable
	b *backend
}

// backend is the driver.Driver behind Store.
type backend struct {
	client *storage.Client
	bucket *storage.BucketHandle
	name   string // the bucket's
	prefix string
	closed atomic.Bool
}

// Open opens the bucket named by rawURL (see the package documentation for its form), with
// the credentials of Google's application default chain, and checks that the bucket exists.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	return driver.OpenWith(ctx, "store/gcs", rawURL, openURL)
}

// OpenURL is Open for a parsed URL.
func OpenURL(ctx context.Context, u *url.URL) (*Store, error) {
	return driver.OpenURLWith(ctx, "store/gcs", u, openURL)
}

// openURL is OpenURL for store.Open, which names the URL in its errors itself.
func openURL(ctx context.Context, u *url.URL) (*Store, error) {
	cfg, err := parseConfig(u)
	if err != nil {
		return nil, store.ConfigError(err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.openTimeout)
		defer cancel()
	}
	client, err := storage.NewClient(ctx, cfg.options...)
	if err != nil {
		// No credentials found, or credentials that cannot be used: retrying will not help.
		return nil, store.ConfigError(fmt.Errorf("store/gcs: bucket %q: client: %w", cfg.bucket, err))
	}
	b := &backend{client: client, bucket: client.Bucket(cfg.bucket), name: cfg.bucket, prefix: cfg.prefix}
	if err := b.check(ctx); err != nil {
		client.Close()
		return nil, err
	}
	return &Store{Portable: driver.New(b), b: b}, nil
}

// check lists at most one object under the prefix: an answer proves the bucket exists and the
// credentials may list it (objects.list, which a role on the objects holds, unlike the
// bucket's own metadata, buckets.get).
func (b *backend) check(ctx context.Context) error {
	it := b.bucket.Objects(ctx, &storage.Query{Prefix: b.prefix})
	it.PageInfo().MaxSize = 1
	_, err := it.Next()
	if err == nil || errors.Is(err, iterator.Done) {
		return nil
	}
	var ge *googleapi.Error
	switch {
	case errors.Is(err, storage.ErrBucketNotExist) || errors.As(err, &ge) && ge.Code == http.StatusNotFound:
		return store.ConfigError(fmt.Errorf("%w: %q (create it first): %w", ErrBucketNotFound, b.name, err))
	case errors.As(err, &ge) && (ge.Code == http.StatusForbidden || ge.Code == http.StatusUnauthorized):
		return store.ConfigError(fmt.Errorf("store/gcs: bucket %q: the credentials may not list its objects (the store needs %v): %w", b.name, Permissions, err))
	}
	return fmt.Errorf("store/gcs: bucket %q: %w", b.name, driver.ContextError(ctx, err))
}

// ErrClosed is the error of an operation on a closed store: the client would still send it.
var ErrClosed = errors.New("store/gcs: the store is closed")

// Close closes the client; the store's operations fail with ErrClosed afterwards.
func (b *backend) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	return b.client.Close()
}

// Client returns the Cloud Storage client, for diagnostics and tests.
func (s *Store) Client() *storage.Client { return s.b.client }

// Bucket returns the bucket's handle.
func (s *Store) Bucket() *storage.BucketHandle { return s.b.bucket }

// BucketName returns the bucket's name.
func (s *Store) BucketName() string { return s.b.name }

// Prefix returns the prefix of the objects' names ("" or ending with "/").
func (s *Store) Prefix() string { return s.b.prefix }

// ObjectName returns the name of the object that holds key.
func (s *Store) ObjectName(key string) string { return s.b.prefix + EncodeKey(key) }

// MinWriteInterval is the shortest renew interval an election over the store may have: GCS
// sustains about one write per second to one object (more are refused with 429), and a
// leader writes its lease's object every R.
const MinWriteInterval = time.Second

var _ store.MinWriteInterval = (*Store)(nil)

// MinWriteInterval implements store.MinWriteInterval.
func (s *Store) MinWriteInterval() (time.Duration, string) {
	return MinWriteInterval, "store/gcs: Google Cloud Storage accepts about one write per second to an object"
}

// maxName is the longest object name GCS accepts, in bytes of UTF-8.
const maxName = 1024

// object returns the handle of key's object, or ErrInvalid when its name would be too long.
func (b *backend) object(key string) (*storage.ObjectHandle, string, error) {
	if b.closed.Load() {
		return nil, "", ErrClosed
	}
	name := b.prefix + EncodeKey(key)
	if len(name) > maxName {
		return nil, "", fmt.Errorf("%w: the key's object name would be %d bytes long, more than GCS's %d", store.ErrInvalid, len(name), maxName)
	}
	return b.bucket.Object(name), name, nil
}

// read returns the document of the object and its generation: one request, whose answer
// holds both (a read in GCS is strongly consistent: it sees every write acknowledged before
// it began). Reads are retried by the client on transient errors: a read changes nothing.
func (b *backend) read(ctx context.Context, o *storage.ObjectHandle, name string) (map[string]any, int64, error) {
	r, err := o.NewReader(ctx)
	if err != nil {
		if errors.Is(err, storage.ErrObjectNotExist) {
			return nil, 0, driver.Wrap(store.ErrNotFound, fmt.Errorf("store/gcs: gs://%s/%s: %w", b.name, name, err))
		}
		return nil, 0, b.fail(ctx, "read", name, err)
	}
	defer r.Close()
	raw, err := io.ReadAll(r)
	if err != nil {
		// Never ErrNotFound, even for a 404: the client reopens a read cut short on the
		// generation it started with, which a newer write may have replaced since.
		return nil, 0, b.fail(ctx, "read", name, err)
	}
	doc, err := driver.DecodeObject(raw, ErrNotJSON)
	if err != nil {
		return nil, 0, fmt.Errorf("gs://%s/%s: %w", b.name, name, err)
	}
	return doc, r.Attrs.Generation, nil
}

// fail returns the error of a request that got no definite answer, naming the object, with the
// context's error joined when the context ended (T7).
func (b *backend) fail(ctx context.Context, op, name string, err error) error {
	return driver.ContextError(ctx, fmt.Errorf("store/gcs: %s gs://%s/%s: %w", op, b.name, name, err))
}

// Why writes are never retried (T7). The client retries the requests it deems idempotent, and a
// write conditioned on a generation (ifGenerationMatch, ifGenerationMatch=0 to create) is one
// to it: sent again after its connection failed or a 5xx, it cannot apply twice. But its
// answer can lie. If the first attempt landed and only its answer was lost, the object's
// generation has moved on, and the retry answers 412 Precondition Failed: a Create would
// report ErrExists for the object it just created, a Patch a lost race for its own write
// (ReadCheckWrite would then read the object again, find its own fields, and answer
// ErrConditionFailed, or write again), a Delete ErrNotFound for what it deleted. A leader
// would step down for nothing, or, worse, a caller would act on a false answer. So every write
// goes out once (storage.RetryNever): a 412 is then the answer to the one request sent, a true
// lost race, and a failed connection or an error status is an unknown outcome, reported as an
// error that holds no sentinel; the engine's next attempt reads first. A token in the object's
// metadata (compare it after a 412) would allow retries, but costs a read per lost race and
// buys nothing the engine's next attempt does not give. Go's net/http itself resends a request
// only when none of it was written, or for GET, HEAD, OPTIONS and TRACE: never an upload
// (POST) or a DELETE that the server may have seen.
var writeOnce = storage.WithPolicy(storage.RetryNever)

// write puts doc on the object under the conditions, once. A 412 is a lost race (lost),
// and a 404 on a write conditioned on a generation is too (the object was deleted meanwhile).
func (b *backend) write(ctx context.Context, o *storage.ObjectHandle, name string, cond storage.Conditions, doc []byte) (lost bool, err error) {
	w := o.If(cond).Retryer(writeOnce).NewWriter(ctx)
	w.ChunkSize = 0 // one request (a multipart upload), not a resumable session of several
	// The content's checksum goes with it: the server refuses a body that does not match it
	// (cut short, say) rather than store what it got of it.
	w.CRC32C = crc32.Checksum(doc, crc32.MakeTable(crc32.Castagnoli))
	w.SendCRC32C = true
	w.ContentType = "application/json"
	// Never served from a cache, even when the bucket is public.
	w.CacheControl = "no-store"
	if _, err := w.Write(doc); err != nil {
		_ = w.Close()
		return false, b.fail(ctx, "write", name, err)
	}
	if err := w.Close(); err != nil {
		if c := statusCode(err); c == http.StatusPreconditionFailed || c == http.StatusNotFound && !cond.DoesNotExist {
			return true, fmt.Errorf("store/gcs: write gs://%s/%s: %w", b.name, name, err)
		}
		return false, b.fail(ctx, "write", name, err)
	}
	return false, nil
}

// statusCode returns the HTTP status of a Cloud Storage error, 0 when it holds none.
func statusCode(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

func (b *backend) Get(ctx context.Context, key string) (map[string]any, error) {
	o, name, err := b.object(key)
	if err != nil {
		return nil, err
	}
	doc, _, err := b.read(ctx, o, name)
	return doc, err
}

// Create writes the object on condition that it does not exist (ifGenerationMatch=0): a 412
// is ErrExists.
func (b *backend) Create(ctx context.Context, key string, doc map[string]any) error {
	o, name, err := b.object(key)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("%w: %v", store.ErrInvalid, err)
	}
	lost, err := b.write(ctx, o, name, storage.Conditions{DoesNotExist: true}, raw)
	if lost {
		return driver.Wrap(store.ErrExists, err)
	}
	return err
}

// Patch reads the object, checks cond, and writes the patched document on the generation read;
// when another writer changed it in between (412), it reads again.
func (b *backend) Patch(ctx context.Context, key string, fields map[string]any, cond *driver.Condition) error {
	return b.readCheckWrite(ctx, key, fields, cond)
}

// Delete reads the object, checks cond, and deletes the generation read; when another writer
// changed it in between (412), it reads again.
func (b *backend) Delete(ctx context.Context, key string, cond *driver.Condition) error {
	return b.readCheckWrite(ctx, key, nil, cond)
}

func (b *backend) readCheckWrite(ctx context.Context, key string, fields map[string]any, cond *driver.Condition) error {
	o, name, err := b.object(key)
	if err != nil {
		return err
	}
	return driver.ReadCheckWrite(ctx, cond, fields,
		func() (map[string]any, int64, error) { return b.read(ctx, o, name) },
		func(gen int64, doc []byte) (bool, error) {
			cond := storage.Conditions{GenerationMatch: gen}
			if doc != nil {
				return b.write(ctx, o, name, cond, doc)
			}
			// Deleting the live object on its generation; never o.Generation(gen), which in a
			// bucket with versioning would delete a noncurrent version and succeed.
			err := o.If(cond).Retryer(writeOnce).Delete(ctx)
			if c := statusCode(err); c == http.StatusPreconditionFailed || c == http.StatusNotFound || errors.Is(err, storage.ErrObjectNotExist) {
				return true, fmt.Errorf("store/gcs: delete gs://%s/%s: %w", b.name, name, err)
			}
			if err != nil {
				return false, b.fail(ctx, "delete", name, err)
			}
			return false, nil
		})
}
