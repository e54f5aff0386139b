package campaign

import (
	"context"
	"errors"
	"fmt"

	"github.com/leasehold/leasehold/internal/storecluster"
)

func init() {
	RegisterBackend("zookeeper", startZooKeeper)
	// An ensemble of three: a follower's or the leader's kill, pause or cut, the ensemble's
	// restart, and the loss of its quorum when two of three are down.
	RegisterClusterBackend("zookeeper-cluster", func(ctx context.Context, dir string) (storecluster.Cluster, error) {
		return storecluster.StartZooKeeper(ctx, dir, 3)
	})
}

// startZooKeeper runs one ZooKeeper server for the campaign, from Debian's package; each
// instance reaches it through a proxy of its own, so that the network faults apply.
func startZooKeeper(ctx context.Context, dir string) (Server, error) {
	c, err := storecluster.StartZooKeeper(ctx, dir, 1)
	if errors.Is(err, storecluster.ErrUnavailable) {
		return Server{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if err != nil {
		return Server{}, err
	}
	return Server{URL: c.URL(nil, nil), Addr: c.Members()[0].Addr, Close: c.Close}, nil
}
