//go:build (!leasehold_minimal || leasehold_s3) && !leasehold_no_s3

package main

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/leasehold/leasehold/store"
	s3store "github.com/leasehold/leasehold/store/s3" // s3://, Webda/S3Store
)

// The S3 store never deletes an object that is not a JSON object: repair removes one with the
// store's own client, unconditionally (see unreadable).
func init() {
	rawDeleters = append(rawDeleters, func(ctx context.Context, st store.Store, key string) (bool, error) {
		ss, ok := st.(*s3store.Store)
		if !ok {
			return false, nil
		}
		_, err := ss.Client().DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(ss.Bucket()), Key: aws.String(ss.ObjectName(key))})
		return true, err
	})
}
