//go:build unix && (!leasehold_minimal || leasehold_dynamodb) && !leasehold_no_dynamodb

package main

import (
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/leasehold/leasehold/internal/cloudemu"
	dynamostore "github.com/leasehold/leasehold/store/dynamodb"
)

func init() {
	cloudStores = append(cloudStores, cloudStore{name: "dynamodb", kind: cloudemu.DynamoDB, setup: func(t *testing.T, e *cloudemu.Emulator) (string, map[string]string, func(*testing.T, string, []byte)) {
		// The table is created by the first Open (create_table=true), as on a first run.
		url := "dynamodb://leasehold_cmd?region=us-east-1&create_table=true&endpoint=" + e.Endpoint
		env := map[string]string{
			"AWS_ACCESS_KEY_ID": cloudemu.AccessKey, "AWS_SECRET_ACCESS_KEY": cloudemu.SecretKey,
			"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull, "AWS_EC2_METADATA_DISABLED": "true",
		}
		put := func(t *testing.T, key string, raw []byte) {
			st, err := dynamostore.Open(t.Context(), url)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if _, err := st.Client().PutItem(t.Context(), &ddb.PutItemInput{TableName: aws.String(st.Table()), Item: map[string]types.AttributeValue{
				dynamostore.KeyAttribute:     &types.AttributeValueMemberS{Value: key},
				dynamostore.DocAttribute:     &types.AttributeValueMemberS{Value: string(raw)},
				dynamostore.VersionAttribute: &types.AttributeValueMemberS{Value: "garbage"},
			}}); err != nil {
				t.Fatal(err)
			}
		}
		return url, env, put
	}})
}
