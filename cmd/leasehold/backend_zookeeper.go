//go:build (!leasehold_minimal || leasehold_zookeeper) && !leasehold_no_zookeeper

package main

import (
	"context"

	"github.com/leasehold/leasehold/store"
	zkstore "github.com/leasehold/leasehold/store/zookeeper" // zk://, Webda/ZooKeeperStore
)

// The ZooKeeper store never overwrites a znode whose data is not a JSON object: repair empties
// one with the store's own connection, on any version (see unreadable). An empty znode reads
// as no record, which the store's Create then fills.
func init() {
	rawDeleters = append(rawDeleters, func(ctx context.Context, st store.Store, key string) (bool, error) {
		zs, ok := st.(*zkstore.Store)
		if !ok {
			return false, nil
		}
		_, err := zs.Conn().Set(zs.Path(key), []byte{}, -1)
		return true, err
	})
}
