package s3

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// ServiceType is the service type configurations name to open a [Store] from the parameters
// url, bucket and prefix (see the package documentation).
const ServiceType = "Webda/S3Store"

func init() {
	store.Register(store.Backend{
		Schemes:     []string{"s3"},
		Open:        driver.Opener(openURL),
		ServiceType: ServiceType,
		Example:     "s3://BUCKET/PREFIX?region=us-east-1",
		Params:      []string{"bucket", "prefix"},
	})
}

// ErrNotJSON means an object holds a value that is not a JSON object: something other than this
// store wrote it. The object is left as it is.
var ErrNotJSON = errors.New("store/s3: object is not a JSON object")

// APICalls are the S3 operations the store makes, with the IAM action each needs: the least
// permissions of docs/backends.md ("S3") grant exactly these actions.
var APICalls = map[string]string{
	"HeadBucket":   "s3:ListBucket",   // Open: the bucket exists and the credentials reach it
	"GetObject":    "s3:GetObject",    // every read (s3:ListBucket makes a missing object 404, not 403)
	"PutObject":    "s3:PutObject",    // Create, Patch, and Delete in tombstone mode
	"DeleteObject": "s3:DeleteObject", // Delete in if-match mode, and Open's probe in auto mode
}

// Metadata of a tombstone: the object a Delete in tombstone mode leaves, which Get reports as
// missing and Create replaces. Its body is empty.
const (
	tombstoneMeta  = "leasehold-record"
	tombstoneValue = "deleted"
)

// openTimeout bounds Open when its context has no deadline.
const openTimeout = 10 * time.Second

// Store is a store.Store on an S3 bucket: one object per key. It is safe for concurrent use.
type Store struct {
	*driver.Portable
	b *backend
}

// backend is the driver.Driver behind Store.
type backend struct {
	client    *s3.Client
	bucket    string
	prefix    string
	tombstone bool // Delete writes a tombstone instead of DeleteObject with If-Match
	transport *http.Transport
	closed    atomic.Bool

	// writeOpts are the per-operation options of the writes: no retries (see noRetry).
	writeOpts []func(*s3.Options)
}

// Open opens the bucket named by rawURL (see the package documentation for its form): it loads
// the AWS configuration (credentials, region) from the standard chain, checks that the bucket
// exists and is reachable with them, and, with delete=auto, finds whether the service honours
// a conditional DeleteObject.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	return driver.OpenWith(ctx, "store/s3", rawURL, openURL)
}

// OpenURL is Open for a parsed URL.
func OpenURL(ctx context.Context, u *url.URL) (*Store, error) {
	return driver.OpenURLWith(ctx, "store/s3", u, openURL)
}

// openURL is OpenURL for store.Open, which names the URL in its errors itself.
func openURL(ctx context.Context, u *url.URL) (*Store, error) {
	return open(ctx, u, false)
}

// open is openURL; retryWrites lets the SDK retry writes too, which the store never does (the
// tests show what it would cost).
func open(ctx context.Context, u *url.URL, retryWrites bool) (*Store, error) {
	cfg, err := parseConfig(u)
	if err != nil {
		return nil, store.ConfigError(err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, openTimeout)
		defer cancel()
	}
	var opts []func(*config.LoadOptions) error
	if cfg.region != "" {
		opts = append(opts, config.WithRegion(cfg.region))
	}
	if cfg.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(cfg.profile))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, store.ConfigError(fmt.Errorf("store/s3: AWS configuration: %w", err))
	}
	// The SDK's HTTP client, with what the chain set on it (AWS_CA_BUNDLE), on a transport of
	// the store's own, whose connections Close closes. Redirects are not followed, as the SDK
	// does not.
	tr := awshttp.NewBuildableClient().GetTransport()
	if bc, ok := awsCfg.HTTPClient.(*awshttp.BuildableClient); ok {
		tr = bc.GetTransport()
	}
	awsCfg.HTTPClient = &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	if awsCfg.Region == "" {
		if cfg.endpoint == "" {
			return nil, store.ConfigError(errors.New("store/s3: no region: set the region parameter, AWS_REGION or the profile's region"))
		}
		awsCfg.Region = "us-east-1" // what most S3-compatible servers expect in the signature
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		o.UsePathStyle = cfg.pathStyle
		if cfg.endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.endpoint)
		}
	})
	b := &backend{client: client, bucket: cfg.bucket, prefix: cfg.prefix, transport: tr}
	if !retryWrites {
		b.writeOpts = []func(*s3.Options){noRetry}
	}
	if err := b.check(ctx, cfg); err != nil {
		tr.CloseIdleConnections()
		return nil, err
	}
	return &Store{Portable: driver.New(b), b: b}, nil
}

// noRetry turns off the SDK's retries for one operation: a write is sent once (see put).
func noRetry(o *s3.Options) { o.Retryer = aws.NopRetryer{} }

// check makes sure the bucket exists and the credentials reach it, and settles the delete mode.
func (b *backend) check(ctx context.Context, cfg *settings) error {
	_, err := b.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(b.bucket)})
	switch status := httpStatus(err); {
	case err == nil:
	case status == http.StatusNotFound:
		return store.ConfigError(fmt.Errorf("store/s3: bucket %q does not exist (the store never creates it): %w", b.bucket, err))
	case status == http.StatusForbidden || status == http.StatusUnauthorized || status == http.StatusMovedPermanently || status == http.StatusBadRequest:
		// AWS answers a bucket of another region 301 (or 400 AuthorizationHeaderMalformed),
		// versitygw 400.
		return store.ConfigError(fmt.Errorf("store/s3: bucket %q: refused: access denied or another region than the bucket's (check the credentials, the region, and s3:ListBucket on the bucket): %w", b.bucket, err))
	case isCredentialsError(err):
		return store.ConfigError(fmt.Errorf("store/s3: bucket %q: no usable AWS credentials: %w", b.bucket, err))
	default:
		return fmt.Errorf("store/s3: bucket %q: %w", b.bucket, driver.ContextError(ctx, err))
	}
	switch cfg.delete {
	case DeleteTombstone:
		b.tombstone = true
	case DeleteAuto:
		honoured, err := b.probeConditionalDelete(ctx)
		if err != nil {
			return err
		}
		b.tombstone = !honoured
	}
	return nil
}

// probeConditionalDelete finds whether the service honours If-Match on DeleteObject, on an
// object of its own below the prefix (a random name no encoded key takes: it holds a '.').
//
// First a delete, with If-Match, of that object, which does not exist: AWS answers 404
// NoSuchKey. A service that answers 204, as for an unconditional delete of a missing object
// (versitygw does, or one that ignores the header), would let two Deletes of one record both
// succeed, the second after the first removed it (T2): tombstones then. A service that refuses
// the header (400, 501) gets tombstones too. Then, after a 404, the object is written, and
// deleted with If-Match on an ETag it does not have: it must stay (412), or the service ignores
// the header on existing objects. The object is then deleted on its ETag.
func (b *backend) probeConditionalDelete(ctx context.Context) (bool, error) {
	r := make([]byte, 8)
	rand.Read(r)
	name := b.prefix + ".leasehold-delete-probe-" + hex.EncodeToString(r)
	wrong := aws.String(`"00000000000000000000000000000000"`)
	del := func(etag *string) (int, error) {
		_, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(name), IfMatch: etag}, b.writeOpts...)
		status := httpStatus(err)
		switch {
		case err == nil:
			return http.StatusNoContent, nil
		case status == http.StatusForbidden:
			return 0, store.ConfigError(fmt.Errorf("store/s3: bucket %q: access denied to DeleteObject below %q (s3:DeleteObject), or set delete=tombstone: %w", b.bucket, b.prefix, err))
		case status == 0 || status >= 500:
			return 0, fmt.Errorf("store/s3: bucket %q: probing conditional deletes: %w", b.bucket, driver.ContextError(ctx, err))
		}
		return status, nil
	}
	status, err := del(wrong)
	if err != nil || status != http.StatusNotFound && status != http.StatusPreconditionFailed {
		return false, err
	}
	out, err := b.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(b.bucket), Key: aws.String(name), Body: bytes.NewReader(nil), IfNoneMatch: aws.String("*"),
	}, b.writeOpts...)
	if err != nil {
		if httpStatus(err) == http.StatusForbidden {
			return false, store.ConfigError(fmt.Errorf("store/s3: bucket %q: access denied to PutObject below %q (s3:PutObject): %w", b.bucket, b.prefix, err))
		}
		return false, fmt.Errorf("store/s3: bucket %q: probing conditional deletes: %w", b.bucket, driver.ContextError(ctx, err))
	}
	status, err = del(wrong)
	if err != nil || status != http.StatusPreconditionFailed {
		return false, err
	}
	if _, err := del(out.ETag); err != nil {
		return false, err
	}
	return true, nil
}

// ErrClosed is the error of every operation on a closed store.
var ErrClosed = errors.New("store/s3: store closed")

// Close closes the connections to the service: later operations fail with ErrClosed.
func (b *backend) Close() error {
	b.closed.Store(true)
	b.transport.CloseIdleConnections()
	return nil
}

// Client returns the S3 client, for diagnostics and tests.
func (s *Store) Client() *s3.Client { return s.b.client }

// Bucket returns the bucket's name.
func (s *Store) Bucket() string { return s.b.bucket }

// Prefix returns the prefix of the object names ("" or ending in "/").
func (s *Store) Prefix() string { return s.b.prefix }

// ObjectName returns the name of the object that holds key.
func (s *Store) ObjectName(key string) string { return s.b.name(key) }

// DeleteMode returns how Delete removes a record: DeleteIfMatch or DeleteTombstone (delete=auto
// is settled at Open).
func (s *Store) DeleteMode() string {
	if s.b.tombstone {
		return DeleteTombstone
	}
	return DeleteIfMatch
}

func (b *backend) name(key string) string { return b.prefix + EncodeKey(key) }

// object is what a read found under a name.
type object struct {
	body      []byte
	etag      string
	tombstone bool
}

// read gets the object name: ErrNotFound when there is none. Reads are strongly consistent on
// S3 (since December 2020): a GetObject sees every PutObject and DeleteObject acknowledged
// before it was sent. The SDK may retry a read; that changes nothing.
func (b *backend) read(ctx context.Context, name string) (object, error) {
	if b.closed.Load() {
		return object{}, ErrClosed
	}
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(name)})
	if err != nil {
		if httpStatus(err) == http.StatusNotFound && !noSuchBucket(err) {
			return object{}, driver.Wrap(store.ErrNotFound, err)
		}
		return object{}, b.explain(ctx, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		return object{}, b.explain(ctx, err)
	}
	o := object{body: body, etag: aws.ToString(out.ETag)}
	for k, v := range out.Metadata {
		if strings.EqualFold(k, tombstoneMeta) && v == tombstoneValue {
			o.tombstone = true
		}
	}
	if o.etag == "" {
		return object{}, fmt.Errorf("store/s3: bucket %q: object %q: the service returned no ETag", b.bucket, name)
	}
	return o, nil
}

// put writes body under name, on the condition that the object is the one whose ETag is etag,
// or that there is none when etag is "". A tombstone has no body. It returns conflict when the
// service refused the condition (see isConflict).
//
// A write is sent once: the SDK does not retry it (noRetry), and net/http sends a PUT or a
// DELETE again only when it wrote none of it on a reused connection that had been closed. The
// SDK retries 5xx answers, throttling and broken connections, and a retry whose first attempt
// landed would lose to that very attempt: 412 to a Create (If-None-Match: *), which would then
// report ErrExists for a record it made, and 412 to a replace (If-Match on the ETag the first
// attempt replaced), which ReadCheckWrite would take for another writer's win, read again and
// patch a second time, or answer ErrConditionFailed for a Patch that took effect. Sent once, a
// 412 or 409 refuses this very request, so the record is not ours, and a failure without an
// answer (a 5xx, a broken connection, the context's end) is an unknown outcome, which the caller
// settles at its next read. A token in the object's metadata, recognised by a read after a 412,
// would not do: by then another writer may have replaced the object that holds it, and the
// retried write would still not know whether it landed.
func (b *backend) put(ctx context.Context, name string, body []byte, etag string, tombstone bool) (conflict bool, err error) {
	if b.closed.Load() {
		return false, ErrClosed
	}
	in := &s3.PutObjectInput{
		Bucket:        aws.String(b.bucket),
		Key:           aws.String(name),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
		ContentType:   aws.String("application/json"),
	}
	if etag == "" {
		in.IfNoneMatch = aws.String("*")
	} else {
		in.IfMatch = aws.String(etag)
	}
	if tombstone {
		in.Metadata = map[string]string{tombstoneMeta: tombstoneValue}
		in.ContentType = nil
	}
	_, err = b.client.PutObject(ctx, in, b.writeOpts...)
	if isConflict(err) {
		return true, nil
	}
	if err != nil {
		return false, b.explain(ctx, err)
	}
	return false, nil
}

// remove deletes the object whose ETag is etag: DeleteObject with If-Match, or a tombstone
// written with If-Match where the service does not honour a conditional delete.
func (b *backend) remove(ctx context.Context, name, etag string) (conflict bool, err error) {
	if b.tombstone {
		return b.put(ctx, name, nil, etag, true)
	}
	if b.closed.Load() {
		return false, ErrClosed
	}
	_, err = b.client.DeleteObject(ctx, &s3.DeleteObjectInput{
		Bucket: aws.String(b.bucket), Key: aws.String(name), IfMatch: aws.String(etag),
	}, b.writeOpts...)
	if isConflict(err) {
		return true, nil
	}
	if err != nil {
		return false, b.explain(ctx, err)
	}
	return false, nil
}

func (b *backend) Get(ctx context.Context, key string) (map[string]any, error) {
	name := b.name(key)
	o, err := b.read(ctx, name)
	if err != nil {
		return nil, err
	}
	if o.tombstone {
		return nil, b.deleted(name)
	}
	return b.decode(name, o.body)
}

// Create writes the document with If-None-Match: * (no object under the name), or, where a
// tombstone is, with If-Match on the tombstone's ETag. When that condition fails, it reads the
// object: a record is ErrExists (true at that read), a tombstone or no object is tried again
// on what the read found, until the context ends. The read after a lost write is the answer,
// so a read cut short by the context leaves the outcome unknown, never a guessed ErrExists.
func (b *backend) Create(ctx context.Context, key string, doc map[string]any) error {
	body, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("%w: %v", store.ErrInvalid, err)
	}
	name := b.name(key)
	etag := "" // none: If-None-Match
	for {
		conflict, err := b.put(ctx, name, body, etag, false)
		if !conflict {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		o, err := b.read(ctx, name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			etag = ""
		case err != nil:
			return err
		case o.tombstone:
			etag = o.etag
		default:
			return driver.Wrap(store.ErrExists, fmt.Errorf("store/s3: bucket %q: object %q exists", b.bucket, name))
		}
	}
}

func (b *backend) Patch(ctx context.Context, key string, fields map[string]any, cond *driver.Condition) error {
	return b.write(ctx, key, cond, fields)
}

func (b *backend) Delete(ctx context.Context, key string, cond *driver.Condition) error {
	return b.write(ctx, key, cond, nil)
}

// write reads the object, checks cond and writes the patched document (or removes the object,
// when fields is nil) on the ETag it read; see driver.ReadCheckWrite.
func (b *backend) write(ctx context.Context, key string, cond *driver.Condition, fields map[string]any) error {
	name := b.name(key)
	read := func() (map[string]any, string, error) {
		o, err := b.read(ctx, name)
		if err != nil {
			return nil, "", err
		}
		if o.tombstone {
			return nil, "", b.deleted(name)
		}
		doc, err := b.decode(name, o.body)
		return doc, o.etag, err
	}
	write := func(etag string, doc []byte) (bool, error) {
		if doc == nil {
			return b.remove(ctx, name, etag)
		}
		return b.put(ctx, name, doc, etag, false)
	}
	return driver.ReadCheckWrite(ctx, cond, fields, read, write)
}

func (b *backend) deleted(name string) error {
	return driver.Wrap(store.ErrNotFound, fmt.Errorf("store/s3: bucket %q: object %q is a tombstone", b.bucket, name))
}

// decode reads a stored document, refusing anything but a JSON object with ErrNotJSON.
func (b *backend) decode(name string, raw []byte) (map[string]any, error) {
	doc, err := driver.DecodeObject(raw, ErrNotJSON)
	if err != nil {
		return nil, fmt.Errorf("bucket %q: object %q: %w", b.bucket, name, err)
	}
	return doc, nil
}

// explain returns an error of the service or the connection naming the bucket, with the
// context's error joined when the context ended (an unknown outcome: see driver.ContextError).
func (b *backend) explain(ctx context.Context, err error) error {
	if noSuchBucket(err) {
		return fmt.Errorf("store/s3: bucket %q does not exist: %w", b.bucket, err)
	}
	return fmt.Errorf("store/s3: bucket %q: %w", b.bucket, driver.ContextError(ctx, err))
}

// isConflict reports whether a conditional write was refused, so that it did not take effect:
// 412 PreconditionFailed (the ETag is not the object's, or an object exists for If-None-Match),
// 409 ConditionalRequestConflict (AWS's answer to a write racing another conditional write on
// the object), or 404 NoSuchKey (If-Match on an object deleted meanwhile). A 404 for a missing
// bucket is not one.
func isConflict(err error) bool {
	switch httpStatus(err) {
	case http.StatusPreconditionFailed, http.StatusConflict:
		return true
	case http.StatusNotFound:
		return !noSuchBucket(err)
	}
	return false
}

// httpStatus returns the HTTP status of the service's answer in err, 0 when there is none.
func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func noSuchBucket(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "NoSuchBucket"
}

// isCredentialsError reports whether err is the SDK's failure to find or use credentials.
func isCredentialsError(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "failed to retrieve credentials") || strings.Contains(msg, "get credentials") || strings.Contains(msg, "get identity")
}
