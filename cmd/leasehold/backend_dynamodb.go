//go:build (!leasehold_minimal || leasehold_dynamodb) && !leasehold_no_dynamodb

package main

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/leasehold/leasehold/store"
	dynamostore "github.com/leasehold/leasehold/store/dynamodb" // dynamodb://, Webda/DynamoStore
)

// The DynamoDB store never deletes an item whose document is not a JSON object: repair removes
// one with the store's own client, unconditionally (see unreadable).
func init() {
	rawDeleters = append(rawDeleters, func(ctx context.Context, st store.Store, key string) (bool, error) {
		ds, ok := st.(*dynamostore.Store)
		if !ok {
			return false, nil
		}
		_, err := ds.Client().DeleteItem(ctx, &ddb.DeleteItemInput{
			TableName: aws.String(ds.Table()),
			Key:       map[string]types.AttributeValue{dynamostore.KeyAttribute: &types.AttributeValueMemberS{Value: key}},
		})
		return true, err
	})
}
