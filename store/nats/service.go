package nats

import (
	"context"
	"fmt"
	"net/url"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/store"
)

// ServiceType is the name configurations use for [Service].
const ServiceType = "Webda/NatsStore"

func init() {
	open := func(ctx context.Context, u *url.URL) (store.Store, error) { return openURL(ctx, u) }
	store.RegisterOpener("nats", open)
	leasehold.RegisterURLStoreType(leasehold.URLStoreKind[*Store]{
		Type:    ServiceType,
		Schemes: []string{"nats"},
		Example: "nats://host:port[,host:port]",
		Open:    openURL,
	}, func() leasehold.Service { return new(Service) })
}

// Service is the Webda/NatsStore service: a NATS JetStream KV store configured with JSON parameters,
// usually as the application's Registry:
//
//	"Registry": {"type": "Webda/NatsStore", "url": "nats://127.0.0.1:4222", "bucket": "myapp"}
//
// Parameters: url (required, nats://host:port[,host:port]) and bucket (optional; when given it
// replaces the URL's bucket parameter). Init opens the store, creating the bucket unless the URL
// says create_bucket=false; Stop closes it; in between, Service implements store.Store by
// delegating to it.
type Service struct {
	leasehold.URLStore[*Store]
	Bucket string `json:"bucket,omitempty"`
}

var (
	_ leasehold.Service = (*Service)(nil)
	_ leasehold.Stopper = (*Service)(nil)
	_ store.Store       = (*Service)(nil)
)

// Init validates the parameters and opens the store. It does not use app, which may be nil.
func (s *Service) Init(ctx context.Context, _ *leasehold.Application) error {
	var overrides url.Values
	if s.Bucket != "" {
		if !validBucket(s.Bucket) {
			return fmt.Errorf("%s: parameter \"bucket\": %q is not a bucket name (letters, digits, '-' and '_')", ServiceType, s.Bucket)
		}
		overrides = url.Values{"bucket": {s.Bucket}}
	}
	return s.OpenURL(ctx, overrides)
}
