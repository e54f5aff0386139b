package etcd

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leasehold/leasehold/store/driver"
)

// explainTLS returns err, a failed connection's, with the reason a TLS session with the first
// endpoint fails, when it does: gRPC reports a handshake that fails as a deadline, without its
// cause.
func explainTLS(ctx context.Context, cfg clientv3.Config, err error) error {
	if cfg.TLS == nil || len(cfg.Endpoints) == 0 {
		return err
	}
	addr := strings.TrimPrefix(cfg.Endpoints[0], "https://")
	if perr := driver.ProbeTLS(context.WithoutCancel(ctx), addr, cfg.TLS); perr != nil {
		return fmt.Errorf("%w; TLS with %s: %v", err, addr, perr)
	}
	return err
}
