package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/leasehold/leasehold/internal/cloudemu"
	"github.com/leasehold/leasehold/internal/proctest"
	"github.com/leasehold/leasehold/internal/testenv"
)

// cloud starts the emulator of a cloud store for the bench, with a bucket or container of its
// own, and returns the system of leasehold over it. What it measures is the store's own cost in
// requests, and the election's timing over a local server, not a cloud's latency.
func (s *servers) cloud(name string) (system, error) {
	if sys, ok := s.clouds[name]; ok {
		return sys, nil // started for an earlier scenario: one emulator per store, on its data
	}
	if name == "gcs" && s.renew < time.Second {
		// Cloud Storage takes about one write per second per object, and store/gcs refuses a
		// shorter R: --ci (R = 250ms) leaves it out, the default timing measures it.
		return system{}, fmt.Errorf("%w: R = %v is below the one write per second per object that Cloud Storage takes", errUnavailable, s.renew)
	}
	kind := map[string]cloudemu.Kind{"dynamodb": cloudemu.DynamoDB, "s3": cloudemu.S3, "gcs": cloudemu.GCS, "azblob": cloudemu.Azure}[name]
	e, err := cloudemu.Start(s.ctx, kind, s.dir)
	if errors.Is(err, cloudemu.ErrUnavailable) {
		err = fmt.Errorf("%w: %v", errUnavailable, err)
		if testenv.Required() {
			err = fmt.Errorf("%v [LEASEHOLD_REQUIRE_SERVERS=1]", err.Error())
		}
		return system{}, err
	}
	if err != nil {
		return system{}, err
	}
	s.emulators = append(s.emulators, e)
	var env []string
	switch name {
	case "dynamodb":
		env = []string{proctest.EnvURL + "=dynamodb://bench?region=us-east-1&create_table=true&endpoint=" + e.Endpoint,
			"AWS_ACCESS_KEY_ID=" + cloudemu.AccessKey, "AWS_SECRET_ACCESS_KEY=" + cloudemu.SecretKey,
			"AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull, "AWS_EC2_METADATA_DISABLED=true"}
	case "gcs":
		if err := e.CreateGCSBucket(s.ctx, "bench"); err != nil {
			return system{}, err
		}
		env = []string{proctest.EnvURL + "=gs://bench/leases/?endpoint=" + e.Endpoint}
	case "s3":
		client := s3.New(s3.Options{
			Region: "us-east-1", BaseEndpoint: aws.String(e.Endpoint), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(cloudemu.AccessKey, cloudemu.SecretKey, ""),
		})
		if _, err := client.CreateBucket(s.ctx, &s3.CreateBucketInput{Bucket: aws.String("bench")}); err != nil {
			return system{}, fmt.Errorf("versitygw: create the bucket: %w", err)
		}
		env = []string{proctest.EnvURL + "=s3://bench/leases/?path_style=true&region=us-east-1&endpoint=" + e.Endpoint,
			"AWS_ACCESS_KEY_ID=" + cloudemu.AccessKey, "AWS_SECRET_ACCESS_KEY=" + cloudemu.SecretKey,
			"AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull, "AWS_EC2_METADATA_DISABLED=true"}
	case "azblob":
		client, err := azblob.NewClientFromConnectionString(e.AzureConnectionString(), nil)
		if err == nil {
			_, err = client.CreateContainer(s.ctx, "bench", nil)
		}
		if err != nil {
			return system{}, fmt.Errorf("Azurite: create the container: %w", err)
		}
		env = []string{proctest.EnvURL + "=azblob://" + cloudemu.AzureAccount + "/bench/leases/?connection_string_env=LEASEHOLD_BENCH_AZURE",
			"LEASEHOLD_BENCH_AZURE=" + e.AzureConnectionString()}
	}
	sys := system{Name: "leasehold/" + name, Backend: name, Kind: kindLeasehold, Env: env}
	if s.clouds == nil {
		s.clouds = map[string]system{}
	}
	s.clouds[name] = sys
	return sys, nil
}
