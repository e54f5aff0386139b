package dynamodb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// ServiceType is the service type configurations name to open a [Store] from the parameters
// url, table and region (see the package documentation).
const ServiceType = "Webda/DynamoStore"

// The attributes of an item: the table's partition key, the document and its version.
const (
	// KeyAttribute is the table's partition key, a string: the store's key.
	KeyAttribute = "id"
	// DocAttribute holds the document, a string: its JSON text.
	DocAttribute = "doc"
	// VersionAttribute holds the item's version, a string: a random token every write
	// replaces, on which the next write is conditioned.
	VersionAttribute = "ver"
)

// apiActions are the DynamoDB API calls the store makes, as IAM actions: the least permissions
// it needs on its table (docs/backends.md shows them as a policy, which a test compares with
// this list and with the calls a test run makes).
var apiActions = []string{"dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem"}

// createTableActions are the calls made besides apiActions with create_table=true.
var createTableActions = []string{"dynamodb:CreateTable"}

func init() {
	store.Register(store.Backend{
		Schemes:     []string{"dynamodb"},
		Open:        driver.Opener(openURL),
		ServiceType: ServiceType,
		Example:     "dynamodb://TABLE?region=REGION",
		Params:      []string{"table", "region"},
	})
}

// ErrNotJSON means an item holds no document this store wrote: its doc attribute is missing,
// not a string, or not the JSON text of an object, or it has no version. The item is left as
// it is.
var ErrNotJSON = errors.New("store/dynamodb: item is not a JSON object document")

// ErrClosed is the error of an operation on a closed store.
var ErrClosed = errors.New("store/dynamodb: store is closed")

// Store is a store.Store on a DynamoDB table. It is safe for concurrent use.
type Store struct {
	*driver.Portable
	b *backend
}

// backend is the driver.Driver behind Store.
type backend struct {
	client    *ddb.Client
	table     string
	transport *http.Transport
	closed    atomic.Bool
	// writeOpts applies to every write the retry policy of retry.go.
	writeOpts func(*ddb.Options)
}

// Open opens the DynamoDB table named by rawURL (see the package documentation for its form),
// with the credentials of the AWS configuration chain, and checks that the table exists with
// the expected key (creating it when the URL says create_table=true).
func Open(ctx context.Context, rawURL string) (*Store, error) {
	return driver.OpenWith(ctx, "store/dynamodb", rawURL, openURL)
}

// OpenURL is Open for a parsed URL.
func OpenURL(ctx context.Context, u *url.URL) (*Store, error) {
	return driver.OpenURLWith(ctx, "store/dynamodb", u, openURL)
}

// openURL is OpenURL for store.Open, which names the URL in its errors itself.
func openURL(ctx context.Context, u *url.URL) (*Store, error) { return open(ctx, u) }

// open is openURL with options for the client (tests count its calls, or set its credentials).
func open(ctx context.Context, u *url.URL, clientOpts ...func(*ddb.Options)) (*Store, error) {
	cfg, err := parseConfig(u)
	if err != nil {
		return nil, store.ConfigError(err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.openTimeout)
		defer cancel()
	}
	var loadOpts []func(*awsconfig.LoadOptions) error
	if cfg.region != "" {
		loadOpts = append(loadOpts, awsconfig.WithRegion(cfg.region))
	}
	if cfg.profile != "" {
		loadOpts = append(loadOpts, awsconfig.WithSharedConfigProfile(cfg.profile))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, store.ConfigError(fmt.Errorf("store/dynamodb: table %q: load the AWS configuration: %w", cfg.table, err))
	}
	if awsCfg.Region == "" {
		return nil, store.ConfigError(fmt.Errorf("store/dynamodb: table %q: no AWS region: set the URL parameter \"region\" (or AWS_REGION, or the profile's region)", cfg.table))
	}
	transport := awshttp.NewBuildableClient().GetTransport()
	b := &backend{table: cfg.table, transport: transport}
	b.writeOpts = writeOptions(newWriteRetryer())
	b.client = ddb.NewFromConfig(awsCfg, append([]func(*ddb.Options){func(o *ddb.Options) {
		if cfg.endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.endpoint)
		}
		o.HTTPClient = &http.Client{Transport: transport}
	}}, clientOpts...)...)
	if err := b.checkTable(ctx, cfg.createTable, awsCfg.Region); err != nil {
		b.Close()
		return nil, err
	}
	return &Store{Portable: driver.New(b), b: b}, nil
}

// Client returns the DynamoDB client, for diagnostics and tests.
func (s *Store) Client() *ddb.Client { return s.b.client }

// Table returns the name of the table.
func (s *Store) Table() string { return s.b.table }

// Close closes the store: its idle connections are closed, and every later operation fails
// with ErrClosed.
func (b *backend) Close() error {
	b.closed.Store(true)
	b.transport.CloseIdleConnections()
	return nil
}

func (b *backend) checkClosed() error {
	if b.closed.Load() {
		return ErrClosed
	}
	return nil
}

func (b *backend) Get(ctx context.Context, key string) (map[string]any, error) {
	if err := b.checkClosed(); err != nil {
		return nil, err
	}
	doc, _, err := b.read(ctx, key)
	return doc, err
}

// read reads the item of key with a strongly consistent read, and returns its document and
// version.
func (b *backend) read(ctx context.Context, key string) (map[string]any, string, error) {
	out, err := b.client.GetItem(ctx, &ddb.GetItemInput{
		TableName:      aws.String(b.table),
		Key:            itemKey(key),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, "", b.opErr(ctx, err)
	}
	if out.Item == nil {
		return nil, "", store.ErrNotFound
	}
	return decodeItem(out.Item)
}

// Create puts the item on the condition that no item has its key: a failed condition is
// ErrExists, answered by the server.
func (b *backend) Create(ctx context.Context, key string, doc map[string]any) error {
	if err := b.checkClosed(); err != nil {
		return err
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("%w: %v", store.ErrInvalid, err)
	}
	ver := newVersion()
	_, err = b.client.PutItem(ctx, &ddb.PutItemInput{
		TableName:                           aws.String(b.table),
		Item:                                item(key, raw, ver),
		ConditionExpression:                 aws.String("attribute_not_exists(#k)"),
		ExpressionAttributeNames:            map[string]string{"#k": KeyAttribute},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, b.writeOpts)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if versionOf(ccf.Item) == ver {
			return nil // this very call's write, sent again (see retry.go)
		}
		return driver.Wrap(store.ErrExists, fmt.Errorf("store/dynamodb: table %q: %w", b.table, err))
	}
	if err != nil {
		return b.opErr(ctx, err)
	}
	return nil
}

func (b *backend) Patch(ctx context.Context, key string, fields map[string]any, cond *driver.Condition) error {
	if err := b.checkClosed(); err != nil {
		return err
	}
	return b.write(ctx, key, cond, fields)
}

func (b *backend) Delete(ctx context.Context, key string, cond *driver.Condition) error {
	if err := b.checkClosed(); err != nil {
		return err
	}
	return b.write(ctx, key, cond, nil)
}

// errOwnWrite is what read reports, inside write, when the item holds the version the call's
// last write would have set: that write took effect (see retry.go).
var errOwnWrite = errors.New("store/dynamodb: the item holds this call's write")

// write reads the item, checks cond and puts the patched document (or deletes the item, when
// fields is nil) on the condition that the item still holds the version read; see
// driver.ReadCheckWrite. A failed condition is a lost race: the item the server returns with
// it (ReturnValuesOnConditionCheckFailure) is the next read, which saves a request; when the
// server returns none (no item, or a server that does not support it), the item is read.
func (b *backend) write(ctx context.Context, key string, cond *driver.Condition, fields map[string]any) error {
	var (
		pending map[string]types.AttributeValue // the item a failed condition returned
		sent    string                          // the version the last Put would have set
	)
	read := func() (map[string]any, string, error) {
		var (
			doc map[string]any
			ver string
			err error
		)
		if pending != nil {
			doc, ver, err = decodeItem(pending)
			pending = nil
		} else {
			doc, ver, err = b.read(ctx, key)
		}
		if err == nil && sent != "" && ver == sent {
			return nil, "", errOwnWrite
		}
		return doc, ver, err
	}
	put := func(ver string, raw []byte) (bool, error) {
		names := map[string]string{"#v": VersionAttribute}
		values := map[string]types.AttributeValue{":v": &types.AttributeValueMemberS{Value: ver}}
		var err error
		if raw == nil {
			sent = ""
			_, err = b.client.DeleteItem(ctx, &ddb.DeleteItemInput{
				TableName:                           aws.String(b.table),
				Key:                                 itemKey(key),
				ConditionExpression:                 aws.String("#v = :v"),
				ExpressionAttributeNames:            names,
				ExpressionAttributeValues:           values,
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}, b.writeOpts)
		} else {
			sent = newVersion()
			_, err = b.client.PutItem(ctx, &ddb.PutItemInput{
				TableName:                           aws.String(b.table),
				Item:                                item(key, raw, sent),
				ConditionExpression:                 aws.String("#v = :v"),
				ExpressionAttributeNames:            names,
				ExpressionAttributeValues:           values,
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}, b.writeOpts)
		}
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			pending = ccf.Item
			return true, nil
		}
		if err != nil {
			return false, b.opErr(ctx, err)
		}
		return false, nil
	}
	err := driver.ReadCheckWrite(ctx, cond, fields, read, put)
	if errors.Is(err, errOwnWrite) {
		return nil
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConditionFailed) {
		return driver.ContextError(ctx, err)
	}
	return err
}

// opErr returns err, the client's, naming the table, with the context's error joined when
// ctx has ended (an unknown outcome; see driver.ContextError).
func (b *backend) opErr(ctx context.Context, err error) error {
	var rnf *types.ResourceNotFoundException
	if errors.As(err, &rnf) {
		err = fmt.Errorf("store/dynamodb: table %q not found: %w", b.table, err)
	} else {
		err = fmt.Errorf("store/dynamodb: table %q: %w", b.table, err)
	}
	return driver.ContextError(ctx, err)
}

// itemKey is the key of key's item.
func itemKey(key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{KeyAttribute: &types.AttributeValueMemberS{Value: key}}
}

// item is the item of key holding the document raw (its JSON text) at version ver.
func item(key string, raw []byte, ver string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		KeyAttribute:     &types.AttributeValueMemberS{Value: key},
		DocAttribute:     &types.AttributeValueMemberS{Value: string(raw)},
		VersionAttribute: &types.AttributeValueMemberS{Value: ver},
	}
}

// versionOf returns the version of item, "" when it has none.
func versionOf(item map[string]types.AttributeValue) string {
	if v, ok := item[VersionAttribute].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// decodeItem returns the document and the version of an item, refusing an item this store did
// not write with ErrNotJSON.
func decodeItem(it map[string]types.AttributeValue) (map[string]any, string, error) {
	d, ok := it[DocAttribute].(*types.AttributeValueMemberS)
	if !ok {
		return nil, "", driver.NotObject(fmt.Errorf("%w: no string attribute %q", ErrNotJSON, DocAttribute))
	}
	doc, err := driver.DecodeObject([]byte(d.Value), ErrNotJSON)
	if err != nil {
		return nil, "", err
	}
	ver := versionOf(it)
	if ver == "" {
		return nil, "", driver.NotObject(fmt.Errorf("%w: no string attribute %q", ErrNotJSON, VersionAttribute))
	}
	return doc, ver, nil
}

// newVersion returns a version no other write has set: 128 random bits.
func newVersion() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}
