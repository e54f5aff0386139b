package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/leasehold/leasehold/internal/proctest"
	"github.com/leasehold/leasehold/internal/storecluster"
	"github.com/leasehold/leasehold/internal/testenv"
)

// zookeeper starts one ZooKeeper server for the bench, from Debian's package, once, and returns
// the system of leasehold over it.
func (s *servers) zookeeper() (system, error) {
	if s.zk == nil && s.zkErr == nil {
		s.zk, s.zkErr = storecluster.StartZooKeeper(s.ctx, filepath.Join(s.dir, "zookeeper"), 1)
		if errors.Is(s.zkErr, storecluster.ErrUnavailable) {
			s.zkErr = fmt.Errorf("%w: %v", errUnavailable, s.zkErr)
			if testenv.Required() {
				s.zkErr = fmt.Errorf("%v [LEASEHOLD_REQUIRE_SERVERS=1]", s.zkErr.Error())
			}
		}
	}
	if s.zkErr != nil {
		return system{}, s.zkErr
	}
	return system{Name: "leasehold/zookeeper", Backend: "zookeeper", Kind: kindLeasehold,
		Env: []string{proctest.EnvURL + "=" + s.zk.URL(nil, map[string]string{"chroot": "/bench"})}}, nil
}
