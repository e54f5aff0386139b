//go:build unix

package campaign

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/leasehold/leasehold/internal/cloudemu"
)

// The cloud stores run over their emulators (internal/cloudemu), one started for each
// campaign in its directory, each instance reaching it through a proxy of its own: the URL's
// endpoint parameter names the proxy.
func init() {
	RegisterBackend("dynamodb", startDynamoDB)
	RegisterBackend("gcs", startGCS)
	RegisterBackend("s3", startS3)
	RegisterBackend("azblob", startAzblob)
}

// minRenew is the shortest R a backend's store takes: Cloud Storage accepts about one write per
// second per object, and store/gcs refuses a shorter R.
var minRenew = map[string]time.Duration{"gcs": time.Second}

// Timing returns the lease duration and renew interval a campaign over backend runs with in
// place of l and r: the same, or, when r is below the shortest R the backend's store takes,
// that R, with L raised by as much (a leader keeps the L − R it had to renew in) and to at
// least twice the new R. At the CI mode's L = 1s, R = 250ms, the gcs backend runs at L = 2s,
// R = 1s: scaling L with R, to 4 s, would double its campaign's time and prove nothing more.
func Timing(backend string, l, r time.Duration) (time.Duration, time.Duration) {
	m, ok := minRenew[backend]
	if !ok || r >= m || r <= 0 {
		return l, r
	}
	return max(l+m-r, 2*m), m
}

// startEmulator starts the emulator of kind, an ErrUnavailable when it is not installed.
func startEmulator(ctx context.Context, kind cloudemu.Kind, dir string) (*cloudemu.Emulator, error) {
	e, err := cloudemu.Start(ctx, kind, dir)
	if errors.Is(err, cloudemu.ErrUnavailable) {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return e, err
}

// withParam returns raw with the query parameter k set to v.
func withParam(raw, k, v string) string {
	u, _ := url.Parse(raw)
	q := u.Query()
	q.Set(k, v)
	u.RawQuery = q.Encode()
	return u.String()
}

// awsEnv is the environment of the AWS emulators: their credentials, and nothing of the
// machine's own AWS configuration.
func awsEnv() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + cloudemu.AccessKey, "AWS_SECRET_ACCESS_KEY=" + cloudemu.SecretKey,
		"AWS_SESSION_TOKEN=", "AWS_PROFILE=", "AWS_REGION=us-east-1",
		"AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull, "AWS_EC2_METADATA_DISABLED=true",
	}
}

func startDynamoDB(ctx context.Context, dir string) (Server, error) {
	e, err := startEmulator(ctx, cloudemu.DynamoDB, dir)
	if err != nil {
		return Server{}, err
	}
	// The campaign opens the store before the workers: that Open creates the table.
	raw := "dynamodb://campaign?region=us-east-1&create_table=true&endpoint=" + url.QueryEscape(e.Endpoint)
	return Server{
		URL: raw, Addr: e.Addr, Close: e.Close, Env: awsEnv(),
		Via: func(proxy string) (string, []string) { return withParam(raw, "endpoint", "http://"+proxy), nil },
	}, nil
}

func startGCS(ctx context.Context, dir string) (Server, error) {
	e, err := startEmulator(ctx, cloudemu.GCS, dir)
	if err != nil {
		return Server{}, err
	}
	if err := e.CreateGCSBucket(ctx, "campaign"); err != nil {
		e.Close()
		return Server{}, err
	}
	raw := "gs://campaign/leases/?endpoint=" + url.QueryEscape(e.Endpoint)
	return Server{
		URL: raw, Addr: e.Addr, Close: e.Close,
		Via: func(proxy string) (string, []string) { return withParam(raw, "endpoint", "http://"+proxy), nil },
	}, nil
}

func startS3(ctx context.Context, dir string) (Server, error) {
	e, err := startEmulator(ctx, cloudemu.S3, dir)
	if err != nil {
		return Server{}, err
	}
	client := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(e.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(cloudemu.AccessKey, cloudemu.SecretKey, ""),
	})
	const bucket = "campaign"
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		e.Close()
		return Server{}, fmt.Errorf("campaign: versitygw: create the bucket: %w", err)
	}
	raw := "s3://" + bucket + "/leases/?path_style=true&region=us-east-1&endpoint=" + url.QueryEscape(e.Endpoint)
	return Server{
		URL: raw, Addr: e.Addr, Close: e.Close, Env: awsEnv(),
		Via: func(proxy string) (string, []string) { return withParam(raw, "endpoint", "http://"+proxy), nil },
	}, nil
}

func startAzblob(ctx context.Context, dir string) (Server, error) {
	e, err := startEmulator(ctx, cloudemu.Azure, dir)
	if err != nil {
		return Server{}, err
	}
	client, err := azblob.NewClientFromConnectionString(e.AzureConnectionString(), nil)
	if err == nil {
		_, err = client.CreateContainer(ctx, "campaign", nil)
	}
	if err != nil {
		e.Close()
		return Server{}, fmt.Errorf("campaign: Azurite: create the container: %w", err)
	}
	const env = "LEASEHOLD_CAMPAIGN_AZURE"
	raw := "azblob://" + cloudemu.AzureAccount + "/campaign/leases/?connection_string_env=" + env
	return Server{
		URL: raw, Addr: e.Addr, Close: e.Close, Env: []string{env + "=" + e.AzureConnectionString()},
		Via: func(proxy string) (string, []string) {
			return withParam(raw, "endpoint", "http://"+proxy+"/"+cloudemu.AzureAccount), nil
		},
	}, nil
}
