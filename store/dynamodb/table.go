package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/leasehold/leasehold/store"
)

// checkTable checks that the table exists, ACTIVE, with the key schema the store needs: one
// string partition key, KeyAttribute, and no sort key. A missing table is created, on demand
// (billing PAY_PER_REQUEST), only when create is set.
func (b *backend) checkTable(ctx context.Context, create bool, region string) error {
	in := &ddb.DescribeTableInput{TableName: aws.String(b.table)}
	out, err := b.client.DescribeTable(ctx, in)
	var rnf *types.ResourceNotFoundException
	if errors.As(err, &rnf) {
		if !create {
			return fmt.Errorf("store/dynamodb: table %q does not exist in region %s: create it with one string partition key %q, or set the URL parameter create_table=true: %w",
				b.table, region, KeyAttribute, err)
		}
		if err := b.createTable(ctx); err != nil {
			return err
		}
		out, err = b.waitActive(ctx, in)
	}
	if err != nil {
		return b.openErr(err)
	}
	if out.Table.TableStatus == types.TableStatusCreating {
		if out, err = b.waitActive(ctx, in); err != nil {
			return b.openErr(err)
		}
	}
	return checkSchema(b.table, out.Table)
}

// createTable creates the table. One created meanwhile by another process is as good.
func (b *backend) createTable(ctx context.Context) error {
	_, err := b.client.CreateTable(ctx, &ddb.CreateTableInput{
		TableName:            aws.String(b.table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(KeyAttribute), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(KeyAttribute), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("store/dynamodb: create table %q (create_table=true): %w", b.table, b.credentialsErr(err))
	}
	return nil
}

// waitActive waits until the table is ACTIVE, or ctx ends (Open's deadline).
func (b *backend) waitActive(ctx context.Context, in *ddb.DescribeTableInput) (*ddb.DescribeTableOutput, error) {
	w := ddb.NewTableExistsWaiter(b.client, func(o *ddb.TableExistsWaiterOptions) {
		o.MinDelay = 200 * time.Millisecond
		o.MaxDelay = 2 * time.Second
	})
	max := time.Minute
	if dl, ok := ctx.Deadline(); ok {
		max = time.Until(dl)
	}
	out, err := w.WaitForOutput(ctx, in, max)
	if err != nil {
		return nil, fmt.Errorf("waiting for the table to become ACTIVE: %w", err)
	}
	return out, nil
}

// checkSchema refuses a table whose key is not the one string partition key the store writes.
func checkSchema(table string, t *types.TableDescription) error {
	ok := len(t.KeySchema) == 1 && aws.ToString(t.KeySchema[0].AttributeName) == KeyAttribute &&
		t.KeySchema[0].KeyType == types.KeyTypeHash
	if ok {
		for _, d := range t.AttributeDefinitions {
			if aws.ToString(d.AttributeName) == KeyAttribute && d.AttributeType != types.ScalarAttributeTypeS {
				ok = false
			}
		}
	}
	if !ok {
		var got []string
		for _, k := range t.KeySchema {
			got = append(got, fmt.Sprintf("%s (%s)", aws.ToString(k.AttributeName), k.KeyType))
		}
		return store.ConfigError(fmt.Errorf("store/dynamodb: table %q has the key %v; the store needs one string partition key %q and no sort key", table, got, KeyAttribute))
	}
	return nil
}

// openErr names the table in an error of Open's calls.
func (b *backend) openErr(err error) error {
	return fmt.Errorf("store/dynamodb: table %q: %w", b.table, b.credentialsErr(err))
}

// credentialsErr marks as a configuration error (one that waiting does not cure) an error by
// which the service refused the credentials or the permission.
func (b *backend) credentialsErr(err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "AccessDeniedException", "UnrecognizedClientException", "InvalidSignatureException",
			"MissingAuthenticationTokenException", "IncompleteSignatureException":
			return store.ConfigError(err)
		}
	}
	return err
}
