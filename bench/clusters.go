package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/leasehold/leasehold/internal/proctest"
	"github.com/leasehold/leasehold/internal/storecluster"
	"github.com/leasehold/leasehold/internal/testenv"
)

// redisCluster starts a Redis Cluster of three shards (a primary and a replica each) for the
// bench, once, and returns the system of leasehold over it.
func (s *servers) redisCluster() (system, error) {
	if s.rc == nil && s.rcErr == nil {
		var c *storecluster.RedisShards
		c, s.rcErr = storecluster.StartRedisShards(s.ctx, filepath.Join(s.dir, "redis-cluster"))
		if s.rcErr == nil {
			s.rc = c
		}
		s.rcErr = unavailable(s.rcErr)
	}
	if s.rcErr != nil {
		return system{}, s.rcErr
	}
	return system{Name: "leasehold/redis-cluster", Backend: "redis-cluster", Kind: kindLeasehold,
		Env: []string{proctest.EnvURL + "=" + s.rc.URL(nil, nil)}}, nil
}

// unavailable marks a server that cannot run here as errUnavailable (a skip), unless
// LEASEHOLD_REQUIRE_SERVERS=1.
func unavailable(err error) error {
	if !errors.Is(err, storecluster.ErrUnavailable) {
		return err
	}
	err = fmt.Errorf("%w: %v", errUnavailable, err)
	if testenv.Required() {
		err = fmt.Errorf("%v [LEASEHOLD_REQUIRE_SERVERS=1]", err.Error())
	}
	return err
}

// zookeeper starts one ZooKeeper server for the bench, from Debian's package, once, and returns
// the system of leasehold over it.
func (s *servers) zookeeper() (system, error) {
	if s.zk == nil && s.zkErr == nil {
		s.zk, s.zkErr = storecluster.StartZooKeeper(s.ctx, filepath.Join(s.dir, "zookeeper"), 1)
		s.zkErr = unavailable(s.zkErr)
	}
	if s.zkErr != nil {
		return system{}, s.zkErr
	}
	return system{Name: "leasehold/zookeeper", Backend: "zookeeper", Kind: kindLeasehold,
		Env: []string{proctest.EnvURL + "=" + s.zk.URL(nil, map[string]string{"chroot": "/bench"})}}, nil
}
