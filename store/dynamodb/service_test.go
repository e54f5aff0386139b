package dynamodb

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/leasehold/leasehold/servicetest"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// TestServiceType: Webda/DynamoStore is registered, decodes its parameters strictly (A2), opens
// the store in Init without an application, works as a store.Store in the table its parameter
// names, closes it in Stop, refuses bad parameters naming them, and works as an application's
// Registry (A4); see package servicetest.
func TestServiceType(t *testing.T) {
	t.Parallel()
	servicetest.Run(t, servicetest.Case[*Store]{
		Type: ServiceType,
		Setup: func(t *testing.T) (map[string]any, func(*testing.T, *Store, string)) {
			table := newTable()
			raw := "dynamodb://?create_table=true&endpoint=" + url.QueryEscape(emulatorEndpoint(t))
			return map[string]any{"url": raw, "table": table, "region": "eu-west-1"}, func(t *testing.T, st *Store, key string) {
				client := st.Client()
				t.Cleanup(func() { deleteTable(t, client, table) })
				out, err := client.GetItem(t.Context(), &ddb.GetItemInput{TableName: aws.String(table), Key: itemKey(key), ConsistentRead: aws.Bool(true)})
				if err != nil || out.Item == nil || st.Table() != table || st.Client().Options().Region != "eu-west-1" {
					t.Errorf("document not in the configured table %q of region eu-west-1: %v", table, err)
				}
			}
		},
		Unknown: "prefix",
		Secret:  "secretpw1",
		Bad: map[string]string{
			`{}`:                                              `"url" is required`,
			`{"url": "postgres://x@y/z"}`:                     `"url"`,
			`{"url": "not a url at all"}`:                     `"url"`,
			`{"url": "dynamodb://tbl1?nonsense=1"}`:           `nonsense`,
			`{"url": "dynamodb://u:secretpw1@t1"}`:            `user information`,
			`{"url": "dynamodb://tbl1", "table": "a"}`:        `"table"`,
			`{"url": "dynamodb://tbl1", "region": "EU WEST"}`: `"region"`,
		},
	})
}

// TestCutConnection: when the network to the server goes silent, an operation fails by its
// context's deadline, well before the HTTP client's own timeouts would notice (E3), and the
// store recovers once the network heals; see storetest.CutConnection.
func TestCutConnection(t *testing.T) {
	t.Parallel()
	raw, _ := serverURL(t)
	openCleaned(t, raw) // creates the table, deleted when the test ends
	target := emulatorEndpoint(t)[len("http://"):]
	storetest.CutConnection(t, target, func(t *testing.T, addr string) store.Store {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		u, _ := url.Parse(raw)
		q := u.Query()
		q.Set("endpoint", "http://"+addr)
		q.Del("create_table")
		u.RawQuery = q.Encode()
		s, err := Open(ctx, u.String())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
