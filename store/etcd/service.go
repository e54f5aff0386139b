package etcd

import (
	"context"
	"net/url"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/store"
)

// ServiceType is the name configurations use for [Service].
const ServiceType = "Webda/EtcdStore"

func init() {
	open := func(ctx context.Context, u *url.URL) (store.Store, error) { return openURL(ctx, u) }
	store.RegisterOpener("etcd", open)
	leasehold.RegisterURLStoreType(leasehold.URLStoreKind[*Store]{
		Type:    ServiceType,
		Schemes: []string{"etcd"},
		Example: "etcd://host:port[,host:port]",
		Open:    openURL,
	}, func() leasehold.Service { return new(Service) })
}

// Service is the Webda/EtcdStore service: an etcd store configured with JSON parameters,
// usually as the application's Registry:
//
//	"Registry": {"type": "Webda/EtcdStore", "url": "etcd://127.0.0.1:2379", "prefix": "myapp/"}
//
// Parameters: url (required, etcd://host:port[,host:port]) and prefix (optional; when given it replaces
// the URL's prefix parameter, and "" means no prefix). Init opens the store, Stop closes it; in
// between, Service implements store.Store by delegating to it.
type Service struct {
	leasehold.URLStore[*Store]
	Prefix *string `json:"prefix,omitempty"`
}

var (
	_ leasehold.Service = (*Service)(nil)
	_ leasehold.Stopper = (*Service)(nil)
	_ store.Store       = (*Service)(nil)
)

// Init validates the parameters and opens the store. It does not use app, which may be nil.
func (s *Service) Init(ctx context.Context, _ *leasehold.Application) error {
	var overrides url.Values
	if s.Prefix != nil {
		overrides = url.Values{"prefix": {*s.Prefix}}
	}
	return s.OpenURL(ctx, overrides)
}
