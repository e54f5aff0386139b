package mysql

import (
	"context"
	"fmt"
	"net/url"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/store"
)

// ServiceType is the name configurations use for [Service].
const ServiceType = "Webda/MySQLStore"

func init() {
	leasehold.RegisterURLStoreType(leasehold.URLStoreKind[*Store]{
		Type:    ServiceType,
		Schemes: []string{"mysql"},
		Example: "mysql://user:password@host:3306/database",
		Open:    openURL,
	}, func() leasehold.Service { return new(Service) })
}

// Service is the service type Webda/MySQLStore: a [Store] in a MySQL or MariaDB table, configured by JSON
// parameters, opened by Init and closed by Stop. It implements store.Store, so a service of
// this type named Registry is the application's Registry:
//
//	"Registry": {"type": "Webda/MySQLStore", "url": "mysql://app:secret@db:3306/app", "table": "registry"}
//
// Parameters: url (required; see the package documentation for its parameters) and table
// (optional; when given it replaces the URL's table parameter; default leasehold_registry).
type Service struct {
	leasehold.URLStore[*Store]
	// Table is the table's name; it overrides the URL's table parameter.
	Table string `json:"table,omitempty"`
}

var (
	_ leasehold.Service = (*Service)(nil)
	_ leasehold.Stopper = (*Service)(nil)
	_ store.Store       = (*Service)(nil)
)

// Init checks the parameters and opens the store. It does not use app, which may be nil.
func (s *Service) Init(ctx context.Context, _ *leasehold.Application) error {
	var overrides url.Values
	if s.Table != "" {
		if err := checkTable(s.Table); err != nil {
			return fmt.Errorf("%s: %w", ServiceType, err)
		}
		overrides = url.Values{"table": {s.Table}}
	}
	return s.OpenURL(ctx, overrides)
}
