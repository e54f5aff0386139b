package azblob

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// Scheme is the URL scheme of the store.
const Scheme = "azblob"

// ServiceType is the service type configurations name to open a [Store] from the parameters
// url, endpoint and connection_string_env (see the package documentation).
const ServiceType = "Webda/AzureBlobStore"

func init() {
	store.Register(store.Backend{
		Schemes:     []string{Scheme},
		Open:        driver.Opener(openURL),
		ServiceType: ServiceType,
		Example:     "azblob://ACCOUNT/CONTAINER/PREFIX",
		Params:      []string{"endpoint", "connection_string_env"},
	})
}

// ErrNotJSON means a blob under the store's prefix holds something that is not a JSON object:
// something other than this store wrote it. The blob is left as it is.
var ErrNotJSON = errors.New("store/azblob: blob is not a JSON object")

// ErrContainerNotFound means the URL's container does not exist in the account. The store
// never creates containers.
var ErrContainerNotFound = errors.New("store/azblob: container does not exist")

// errClosed answers every call on a closed store.
var errClosed = errors.New("store/azblob: the store is closed")

// maxBlobName is Azure's limit on a blob's name, in bytes.
const maxBlobName = 1024

// openTimeout bounds Open's check of the container when its context has no deadline.
const openTimeout = 30 * time.Second

// APICalls are the Blob service operations the store makes, with the data action each needs
// under Azure RBAC: docs/backends.md's role definition grants exactly these
// (TestRoleDefinitionMatchesCalls).
var APICalls = map[string]string{
	"Get Blob":            "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read",   // Get, and the read of a Patch or Delete
	"Get Blob Properties": "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read",   // Open's check of the container
	"Put Blob":            "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write",  // Create (If-None-Match: *), Patch (If-Match)
	"Delete Blob":         "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/delete", // Delete (If-Match)
}

// Store is a store.Store on blobs of an Azure Storage container. It is safe for concurrent use.
type Store struct {
	*driver.Portable
	b *backend
}

// backend is the driver.Driver behind Store.
type backend struct {
	cfg       *config
	client    *container.Client
	transport *http.Transport
	secrets   []string
	closed    atomic.Bool
}

// Open opens the container named by rawURL (see the package documentation for its form) and
// checks that it exists and can be read.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	return driver.OpenWith(ctx, "store/azblob", rawURL, openURL)
}

// OpenURL is Open for a parsed URL.
func OpenURL(ctx context.Context, u *url.URL) (*Store, error) {
	return driver.OpenURLWith(ctx, "store/azblob", u, openURL)
}

// openURL is OpenURL for store.Open, which names the URL in its errors itself.
func openURL(ctx context.Context, u *url.URL) (*Store, error) {
	cfg, err := parseConfig(u)
	if err != nil {
		return nil, store.ConfigError(err)
	}
	b := &backend{cfg: cfg, secrets: cfg.secrets()}
	b.transport = http.DefaultTransport.(*http.Transport).Clone()
	opts := &container.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: &http.Client{Transport: b.transport},
		Telemetry: policy.TelemetryOptions{ApplicationID: "leasehold"},
	}}
	containerURL := cfg.serviceURL + "/" + cfg.container
	switch {
	case cfg.credential == credentialDefault:
		cred, err := azidentity.NewDefaultAzureCredential(nil)
		if err != nil {
			return nil, store.ConfigError(fmt.Errorf("store/azblob: DefaultAzureCredential: %w", err))
		}
		b.client, err = container.NewClient(containerURL, cred, opts)
	case cfg.sharedKey != "":
		var cred *container.SharedKeyCredential
		cred, err = container.NewSharedKeyCredential(cfg.account, cfg.sharedKey)
		if err != nil {
			return nil, store.ConfigError(fmt.Errorf("store/azblob: the AccountKey of the connection string in %s is not valid base64", cfg.envName))
		}
		b.client, err = container.NewClientWithSharedKeyCredential(containerURL, cred, opts)
	default:
		b.client, err = container.NewClientWithNoCredential(containerURL+"?"+cfg.sas, opts)
	}
	if err != nil {
		return nil, store.ConfigError(b.scrub(fmt.Errorf("store/azblob: container %q: %w", cfg.container, err)))
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, openTimeout)
		defer cancel()
	}
	if err := b.check(ctx); err != nil {
		b.transport.CloseIdleConnections()
		return nil, err
	}
	return &Store{Portable: driver.New(b), b: b}, nil
}

// check reads the properties of a blob the store never writes (its name ends in a character
// EncodeKey escapes): "not found" proves the container exists and the credentials may read
// it, with the least permission the store needs anyway, where a check of the container itself
// would need another (containers/read).
func (b *backend) check(ctx context.Context) error {
	_, err := b.client.NewBlobClient(b.cfg.prefix+".open-check").GetProperties(ctx, nil)
	switch {
	case err == nil || bloberror.HasCode(err, bloberror.BlobNotFound):
		return nil
	case bloberror.HasCode(err, bloberror.ContainerNotFound):
		return store.ConfigError(b.containerMissing(err))
	case isRefused(err):
		return store.ConfigError(b.scrub(fmt.Errorf("store/azblob: account %q refused access to container %q: %w", b.cfg.account, b.cfg.container, err)))
	}
	return b.scrub(fmt.Errorf("store/azblob: check container %q of account %q at %s: %w", b.cfg.container, b.cfg.account, b.cfg.serviceURL, driver.ContextError(ctx, err)))
}

// isRefused reports whether err is the service refusing the credentials (401, 403) or
// azidentity failing to get a token.
func isRefused(err error) bool {
	var re *azcore.ResponseError
	if errors.As(err, &re) && (re.StatusCode == http.StatusUnauthorized || re.StatusCode == http.StatusForbidden) {
		return true
	}
	var af *azidentity.AuthenticationFailedError
	return errors.As(err, &af)
}

func (b *backend) containerMissing(err error) error {
	return fmt.Errorf("%w: container %q in account %q (%s); create it first: %w", ErrContainerNotFound, b.cfg.container, b.cfg.account, b.cfg.serviceURL, err)
}

// Close closes the store's idle connections; every later call fails.
func (b *backend) Close() error {
	b.closed.Store(true)
	b.transport.CloseIdleConnections()
	return nil
}

// Client returns the client of the store's container, for diagnostics and tests.
func (s *Store) Client() *container.Client { return s.b.client }

// Container returns the name of the store's container.
func (s *Store) Container() string { return s.b.cfg.container }

// Prefix returns the prefix of the store's blob names.
func (s *Store) Prefix() string { return s.b.cfg.prefix }

// BlobName returns the name of the blob that holds key's document.
func (s *Store) BlobName(key string) string { return s.b.name(key) }

func (b *backend) name(key string) string { return b.cfg.prefix + EncodeKey(key) + blobSuffix }

// blob returns the client of key's blob, or ErrInvalid when its name would be too long.
func (b *backend) blob(key string) (*blockblob.Client, string, error) {
	if b.closed.Load() {
		return nil, "", errClosed
	}
	n := b.name(key)
	if len(n) > maxBlobName {
		return nil, "", fmt.Errorf("%w: the key's blob name is %d bytes long, more than Azure's %d", store.ErrInvalid, len(n), maxBlobName)
	}
	return b.client.NewBlockBlobClient(n), n, nil
}

// writeContext is ctx for a write: the SDK's retries are off for it, whatever ctx says.
//
// azcore retries a request that failed on its connection, timed out, or got a 408, 429, 500,
// 502, 503 or 504. For a conditional write that is wrong (T7): a first attempt that landed,
// with its answer lost or a 500 OperationTimedOut (which Azure documents as "may or may not
// have succeeded"), changes the ETag, and the same write sent again then gets 412 (If-Match)
// or 409 (If-None-Match: *): a lost race reported for a write that won, a lease its holder
// believes it lost while it holds it, or a Create that says "exists" about its own record.
// So a write is sent once, and any failure other than the service's answer is an unknown
// outcome: the caller (the Lock) reads the blob at its next attempt and finds its own record
// if the write landed (E10). A token in the blob's metadata, compared after a 412, would let
// the SDK retry, but a write that landed and was then overwritten by another before the
// retry still could not be told from one that never landed: the answer would have to be
// "unknown" anyway, for one more request's cost. The context's value wins over the client's
// options and over any retry options the caller's context carries, being set last. Go's
// transport still resends a request it could not send at all (no byte written on a reused
// connection), which cannot have landed. Reads keep the SDK's retries: a read changes nothing.
func writeContext(ctx context.Context) context.Context {
	return policy.WithRetryOptions(ctx, policy.RetryOptions{MaxRetries: -1})
}

// Get implements driver.Driver.
func (b *backend) Get(ctx context.Context, key string) (map[string]any, error) {
	doc, _, err := b.read(ctx, key)
	return doc, err
}

// read returns key's document and its blob's ETag.
func (b *backend) read(ctx context.Context, key string) (map[string]any, azcore.ETag, error) {
	bc, name, err := b.blob(key)
	if err != nil {
		return nil, "", err
	}
	resp, err := bc.DownloadStream(ctx, nil)
	if err != nil {
		return nil, "", b.opError(ctx, "get", name, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", b.opError(ctx, "get", name, err)
	}
	if resp.ETag == nil || *resp.ETag == "" {
		return nil, "", fmt.Errorf("store/azblob: get blob %q: the answer has no ETag", name)
	}
	doc, err := driver.DecodeObject(raw, ErrNotJSON)
	if err != nil {
		return nil, "", fmt.Errorf("store/azblob: blob %q: %w", name, err)
	}
	return doc, *resp.ETag, nil
}

// Create implements driver.Driver: a Put Blob with If-None-Match: *. A blob already there is
// ErrExists: Azure answers 409 BlobAlreadyExists, and 412 ConditionNotMet is taken as the same
// answer (the only condition sent is the blob's absence).
func (b *backend) Create(ctx context.Context, key string, doc map[string]any) error {
	raw, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("%w: %v", store.ErrInvalid, err)
	}
	bc, name, err := b.blob(key)
	if err != nil {
		return err
	}
	absent := azcore.ETagAny
	_, err = bc.Upload(writeContext(ctx), body(raw), uploadOptions(&blob.ModifiedAccessConditions{IfNoneMatch: &absent}))
	if bloberror.HasCode(err, bloberror.BlobAlreadyExists, bloberror.ConditionNotMet) {
		return driver.Wrap(store.ErrExists, fmt.Errorf("store/azblob: blob %q exists: %w", name, b.scrub(err)))
	}
	return b.opError(ctx, "create", name, err)
}

// Patch implements driver.Driver.
func (b *backend) Patch(ctx context.Context, key string, fields map[string]any, cond *driver.Condition) error {
	return b.write(ctx, key, fields, cond)
}

// Delete implements driver.Driver.
func (b *backend) Delete(ctx context.Context, key string, cond *driver.Condition) error {
	return b.write(ctx, key, nil, cond)
}

// write reads the blob, checks cond and writes the patched document (deletes the blob, when
// fields is nil) with If-Match on the ETag it read; see driver.ReadCheckWrite. 412
// ConditionNotMet means another writer changed the blob in between, 404 BlobNotFound that it
// deleted it: a conflict, and ReadCheckWrite reads again.
func (b *backend) write(ctx context.Context, key string, fields map[string]any, cond *driver.Condition) error {
	bc, name, err := b.blob(key)
	if err != nil {
		return err
	}
	read := func() (map[string]any, azcore.ETag, error) { return b.read(ctx, key) }
	write := func(etag azcore.ETag, raw []byte) (bool, error) {
		mac := &blob.ModifiedAccessConditions{IfMatch: &etag}
		var err error
		op := "patch"
		if raw == nil {
			op = "delete"
			_, err = bc.Delete(writeContext(ctx), &blob.DeleteOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: mac}})
		} else {
			_, err = bc.Upload(writeContext(ctx), body(raw), uploadOptions(mac))
		}
		if bloberror.HasCode(err, bloberror.ConditionNotMet, bloberror.BlobNotFound) {
			return true, nil
		}
		return false, b.opError(ctx, op, name, err)
	}
	return driver.ReadCheckWrite(ctx, cond, fields, read, write)
}

func body(raw []byte) io.ReadSeekCloser { return streaming.NopCloser(bytes.NewReader(raw)) }

func uploadOptions(mac *blob.ModifiedAccessConditions) *blockblob.UploadOptions {
	ct := "application/json"
	return &blockblob.UploadOptions{
		HTTPHeaders:      &blob.HTTPHeaders{BlobContentType: &ct},
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: mac},
	}
}

// opError explains an operation's error: the store's sentinel for a missing blob, an error
// naming the container when it is missing, the blob's name otherwise; the context's error
// joined when the context ended (an unknown outcome, T7); never a secret.
func (b *backend) opError(ctx context.Context, op, name string, err error) error {
	if err == nil {
		return nil
	}
	switch {
	case bloberror.HasCode(err, bloberror.BlobNotFound):
		return driver.Wrap(store.ErrNotFound, b.scrub(fmt.Errorf("store/azblob: blob %q: %w", name, err)))
	case bloberror.HasCode(err, bloberror.ContainerNotFound):
		return b.scrub(b.containerMissing(err))
	}
	return b.scrub(driver.ContextError(ctx, fmt.Errorf("store/azblob: %s blob %q in container %q: %w", op, name, b.cfg.container, err)))
}

// scrub returns err, with the connection string's key or signature hidden from its text if it
// holds them (see store.MaskSecrets); errors.Is and errors.As still see through it.
func (b *backend) scrub(err error) error {
	if err == nil || len(b.secrets) == 0 {
		return err
	}
	msg := err.Error()
	masked := store.MaskSecrets(msg, b.secrets)
	if masked == msg {
		return err
	}
	return &scrubbed{err: err, msg: masked}
}

// scrubbed is err with its text masked.
type scrubbed struct {
	err error
	msg string
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }
