package dynamodb

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/leasehold/leasehold/internal/cloudemu"
	"github.com/leasehold/leasehold/internal/foreigndoc"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// TestOpenByURL checks that importing the package registers the dynamodb scheme (T4), that
// create_table=true creates the table with its documented key, and that the table is found
// again without it.
func TestOpenByURL(t *testing.T) {
	t.Parallel()
	if !slices.Contains(store.Schemes(), "dynamodb") {
		t.Fatalf("scheme dynamodb is not registered: %v", store.Schemes())
	}
	raw, table := serverURL(t)
	s, err := store.Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	ds, ok := s.(*Store)
	if !ok {
		t.Fatalf("store.Open returned a %T", s)
	}
	defer deleteTable(t, ds.Client(), table)
	if ds.Table() != table {
		t.Errorf("Table() = %q, want %q", ds.Table(), table)
	}
	out, err := ds.Client().DescribeTable(t.Context(), &ddb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	if err := checkSchema(table, out.Table); err != nil {
		t.Error(err)
	}
	if out.Table.BillingModeSummary == nil || out.Table.BillingModeSummary.BillingMode != types.BillingModePayPerRequest {
		t.Errorf("billing mode %+v, want PAY_PER_REQUEST", out.Table.BillingModeSummary)
	}
	// Opening again finds the table instead of creating it.
	s2, err := Open(t.Context(), strings.Replace(raw, "&create_table=true", "", 1))
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
}

// TestStoredItem checks where and how a document lands: the item of its key in the table,
// its JSON text in doc, a version in ver that every write replaces.
func TestStoredItem(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	if err := s.Create(t.Context(), "cluster:leader", map[string]any{"holder": "a"}); err != nil {
		t.Fatal(err)
	}
	get := func() map[string]types.AttributeValue {
		out, err := s.Client().GetItem(t.Context(), &ddb.GetItemInput{TableName: aws.String(s.Table()), Key: itemKey("cluster:leader"), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item
	}
	it := get()
	if d, ok := it[DocAttribute].(*types.AttributeValueMemberS); !ok || d.Value != `{"holder":"a"}` {
		t.Errorf("doc = %#v", it[DocAttribute])
	}
	v1 := versionOf(it)
	if len(v1) != 32 {
		t.Errorf("ver = %q, want 32 hex digits", v1)
	}
	if err := s.Patch(t.Context(), "cluster:leader", map[string]any{"holder": "b"}, &store.Condition{Field: "holder", Value: "a"}); err != nil {
		t.Fatal(err)
	}
	if v2 := versionOf(get()); v2 == v1 || v2 == "" {
		t.Errorf("ver after a patch = %q, before %q", v2, v1)
	}
}

// TestRecreatedItemIsNotTheOneRead: an item deleted and created again has a new version, so a
// write conditioned on the version read before the deletion fails (a counter that starts
// again at 1 would let it overwrite the new item).
func TestRecreatedItemIsNotTheOneRead(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	if err := s.Create(ctx, "k", map[string]any{"holder": "a"}); err != nil {
		t.Fatal(err)
	}
	_, ver, err := s.b.read(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "k", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, "k", map[string]any{"holder": "b"}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Client().PutItem(ctx, &ddb.PutItemInput{
		TableName: aws.String(s.Table()), Item: item("k", []byte(`{"holder":"a2"}`), newVersion()),
		ConditionExpression:       aws.String("#v = :v"),
		ExpressionAttributeNames:  map[string]string{"#v": VersionAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberS{Value: ver}},
	})
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Errorf("a write on the version of the deleted item: %v, want ConditionalCheckFailedException", err)
	}
}

// TestMissingTable checks that a missing table without create_table=true is an error naming
// the table and the parameter, and that nothing was created.
func TestMissingTable(t *testing.T) {
	t.Parallel()
	raw, table := serverURL(t)
	raw = strings.Replace(raw, "&create_table=true", "", 1)
	_, err := Open(t.Context(), raw)
	var rnf *types.ResourceNotFoundException
	if !errors.As(err, &rnf) || !strings.Contains(err.Error(), `"`+table+`"`) || !strings.Contains(err.Error(), "create_table=true") || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Open of a missing table: %v, want an error naming it and create_table", err)
	}
	if _, err := Open(t.Context(), raw+"&create_table=false"); err == nil {
		t.Errorf("Open with create_table=false created the table")
	}
}

// TestWrongKeySchema checks that a table whose key is not the one string partition key id is
// refused, naming the table and the key it needs: the store's items would not fit it.
func TestWrongKeySchema(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	for name, in := range map[string]*ddb.CreateTableInput{
		"other name": {
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		},
		"number": {
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(KeyAttribute), AttributeType: types.ScalarAttributeTypeN}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(KeyAttribute), KeyType: types.KeyTypeHash}},
		},
		"sort key": {
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(KeyAttribute), AttributeType: types.ScalarAttributeTypeS}, {AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(KeyAttribute), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
		},
	} {
		table := newTable()
		in.TableName = aws.String(table)
		in.BillingMode = types.BillingModePayPerRequest
		if _, err := s.Client().CreateTable(t.Context(), in); err != nil {
			t.Fatal(err)
		}
		defer deleteTable(t, s.Client(), table)
		_, err := Open(t.Context(), "dynamodb://"+table+"?endpoint="+url.QueryEscape(emulatorEndpoint(t)))
		if !errors.Is(err, store.ErrConfig) || !strings.Contains(err.Error(), `"`+table+`"`) || !strings.Contains(err.Error(), `partition key "id"`) {
			t.Errorf("%s: Open: %v, want a configuration error naming the table and the key", name, err)
		}
	}
}

// TestNotJSON checks that an item this store did not write is an error naming the key, for
// every operation, and is left as it is.
func TestNotJSON(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	items := map[string]map[string]types.AttributeValue{
		"not json":   {DocAttribute: &types.AttributeValueMemberS{Value: "not json"}, VersionAttribute: &types.AttributeValueMemberS{Value: "v"}},
		"array":      {DocAttribute: &types.AttributeValueMemberS{Value: "[1,2]"}, VersionAttribute: &types.AttributeValueMemberS{Value: "v"}},
		"null":       {DocAttribute: &types.AttributeValueMemberS{Value: "null"}, VersionAttribute: &types.AttributeValueMemberS{Value: "v"}},
		"trailing":   {DocAttribute: &types.AttributeValueMemberS{Value: `{"a":1} x`}, VersionAttribute: &types.AttributeValueMemberS{Value: "v"}},
		"number doc": {DocAttribute: &types.AttributeValueMemberN{Value: "42"}, VersionAttribute: &types.AttributeValueMemberS{Value: "v"}},
		"no doc":     {"other": &types.AttributeValueMemberS{Value: "x"}},
		"no version": {DocAttribute: &types.AttributeValueMemberS{Value: `{"a":1}`}},
		"map doc":    {DocAttribute: &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"a": &types.AttributeValueMemberN{Value: "1"}}}, VersionAttribute: &types.AttributeValueMemberS{Value: "v"}},
	}
	for name, it := range items {
		key := "bad:" + name
		it[KeyAttribute] = &types.AttributeValueMemberS{Value: key}
		if _, err := s.Client().PutItem(t.Context(), &ddb.PutItemInput{TableName: aws.String(s.Table()), Item: it}); err != nil {
			t.Fatal(err)
		}
		foreigndoc.Value(t, s, key, name, ErrNotJSON)
		out, err := s.Client().GetItem(t.Context(), &ddb.GetItemInput{TableName: aws.String(s.Table()), Key: itemKey(key), ConsistentRead: aws.Bool(true)})
		if err != nil || len(out.Item) != len(it) {
			t.Errorf("%q changed: %v, %v", key, out.Item, err)
		}
	}
}

// TestBadURL checks the errors for malformed URLs and bad parameters: they name the problem
// and are configuration errors; credentials in a URL are refused without being shown (T4).
func TestBadURL(t *testing.T) {
	t.Parallel()
	storetest.BadURLs(t, "hunter2secret", map[string]string{
		"dynamodb://u:hunter2secret@table1?region=us-east-1":  "user information",
		"dynamodb://table1?bogus=1":                           "bogus",
		"dynamodb://table1/some/path":                         "path",
		"dynamodb://table1:8000":                              "port",
		"dynamodb://?region=us-east-1":                        "names no table",
		"dynamodb://ab":                                       `"table"`,
		"dynamodb://table1?table=a%2Fb":                       `"table"`,
		"dynamodb://table1?region=US%20EAST":                  `"region"`,
		"dynamodb://table1?region=":                           `"region"`,
		"dynamodb://table1?endpoint=ftp://127.0.0.1:1":        `"endpoint"`,
		"dynamodb://table1?endpoint=127.0.0.1:8000":           `"endpoint"`,
		"dynamodb://table1?endpoint=http://":                  `"endpoint"`,
		"dynamodb://table1?endpoint=http://127.0.0.1:1/x":     `"endpoint"`,
		"dynamodb://table1?profile=":                          `"profile"`,
		"dynamodb://table1?create_table=perhaps":              `"create_table"`,
		"dynamodb://table1?open_timeout=soon":                 `"open_timeout"`,
		"dynamodb://table1?open_timeout=-1s":                  `"open_timeout"`,
		"dynamodb://table1?region=us-east-1&region=eu-west-1": `"region"`,
	}, func(ctx context.Context, raw string) (store.Store, error) { return Open(ctx, raw) })
}

// TestEndpointWithUserInformation: an endpoint holding user information is refused, naming
// the parameter. (store.Redact does not hide the user information of a URL inside a query
// parameter, so the error's copy of the URL shows it: this case is not in TestBadURL.)
func TestEndpointWithUserInformation(t *testing.T) {
	t.Parallel()
	_, err := Open(t.Context(), "dynamodb://table1?endpoint="+url.QueryEscape("http://k:s@h:1"))
	if !errors.Is(err, store.ErrConfig) || !strings.Contains(err.Error(), `"endpoint" holds user information`) {
		t.Errorf("Open with user information in the endpoint: %v", err)
	}
}

// TestTableParameter: the table parameter names the table, instead of the URL's host (the
// service's table parameter sets it).
func TestTableParameter(t *testing.T) {
	t.Parallel()
	table := newTable()
	for _, raw := range []string{
		"dynamodb://?table=" + table + "&create_table=true&endpoint=" + url.QueryEscape(emulatorEndpoint(t)),
		"dynamodb://other-table?table=" + table + "&endpoint=" + url.QueryEscape(emulatorEndpoint(t)),
	} {
		s := openRaw(t, raw)
		if s.Table() != table {
			t.Errorf("Table() = %q, want %q", s.Table(), table)
		}
		if err := s.Create(t.Context(), "k", map[string]any{}); err != nil && !errors.Is(err, store.ErrExists) {
			t.Error(err)
		}
	}
	s := openRaw(t, "dynamodb://"+table+"?endpoint="+url.QueryEscape(emulatorEndpoint(t)))
	if _, err := s.Get(t.Context(), "k"); err != nil {
		t.Errorf("the document is not in table %s: %v", table, err)
	}
	deleteTable(t, s.Client(), table)
}

// TestRegionAndEndpoint: the region parameter is the client's region, in place of AWS_REGION,
// and the endpoint parameter is where its requests go.
func TestRegionAndEndpoint(t *testing.T) {
	t.Parallel()
	raw, _ := serverURL(t)
	s := openCleaned(t, raw+"&region=eu-west-3")
	if r := s.Client().Options().Region; r != "eu-west-3" {
		t.Errorf("region = %q, want eu-west-3", r)
	}
	if e := aws.ToString(s.Client().Options().BaseEndpoint); e != emulatorEndpoint(t) {
		t.Errorf("endpoint = %q, want %q", e, emulatorEndpoint(t))
	}
	// Without a region parameter, the AWS configuration's (AWS_REGION, set by TestMain).
	s2 := openRaw(t, strings.Replace(raw, "&create_table=true", "", 1))
	if r := s2.Client().Options().Region; r != "us-east-1" {
		t.Errorf("region = %q, want AWS_REGION's us-east-1", r)
	}
}

// TestProfileAndNoRegion: the profile parameter picks a profile of the shared configuration
// (here its region); an unknown profile is a configuration error naming it; without a region
// anywhere, Open says to set the region parameter. Not parallel: it sets the environment.
func TestProfileAndNoRegion(t *testing.T) {
	raw, _ := serverURL(t)
	cfg := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(cfg, []byte("[profile lh]\nregion = ap-south-2\naws_access_key_id = "+cloudemu.AccessKey+"\naws_secret_access_key = "+cloudemu.SecretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CONFIG_FILE", cfg)
	t.Setenv("AWS_REGION", "")
	s := openCleaned(t, raw+"&profile=lh")
	if r := s.Client().Options().Region; r != "ap-south-2" {
		t.Errorf("region = %q, want the profile's ap-south-2", r)
	}
	_, err := Open(t.Context(), raw+"&profile=nosuchprofile")
	if !errors.Is(err, store.ErrConfig) || !strings.Contains(err.Error(), "nosuchprofile") {
		t.Errorf("Open with an unknown profile: %v, want a configuration error naming it", err)
	}
	_, err = Open(t.Context(), raw)
	if !errors.Is(err, store.ErrConfig) || !strings.Contains(err.Error(), `"region"`) {
		t.Errorf("Open without a region: %v, want a configuration error naming the region parameter", err)
	}
}

// TestOpenTimeout: open_timeout bounds an Open whose context has no deadline, against a
// server that accepts connections and never answers.
func TestOpenTimeout(t *testing.T) {
	t.Parallel()
	silent := newSilentServer(t)
	_, err := Open(context.Background(), "dynamodb://table1?open_timeout=200ms&endpoint=http://"+silent)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `"table1"`) {
		t.Errorf("Open against a silent server: %v, want context.DeadlineExceeded naming the table", err)
	}
	if !store.NotReady(err) {
		t.Errorf("a server that does not answer is not a configuration error: %v", err)
	}
}

// TestClosed: every operation on a closed store fails with ErrClosed, not ErrNotFound.
func TestClosed(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	s.Close()
	_, err := s.Get(t.Context(), "k")
	if !errors.Is(err, ErrClosed) {
		t.Errorf("Get on a closed store: %v", err)
	}
	for name, err := range map[string]error{
		"create": s.Create(t.Context(), "k", map[string]any{}),
		"patch":  s.Patch(t.Context(), "k", map[string]any{}, nil),
		"delete": s.Delete(t.Context(), "k", nil),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s on a closed store: %v", name, err)
		}
	}
}

// openRaw opens raw, closed when the test ends.
func openRaw(t *testing.T, raw string) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
