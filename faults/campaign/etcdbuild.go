package campaign

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
)

// etcdModule is the module of the etcd server, which this module requires for its embedded
// etcd backend: its main package is the etcd binary of the cluster backend.
const etcdModule = "go.etcd.io/etcd/server/v3"

// buildEtcd builds the etcd binary of the etcd module this module requires into
// <user cache>/leasehold/etcd-<version>/etcd, where storecluster.EtcdBinary finds it: a clean
// machine with Go and this source tree runs the cluster backend without installing etcd.
// It builds in this package's source directory (the faults module) and takes about a minute
// when the module is already compiled for the tests.
func buildEtcd(ctx context.Context) error {
	version := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			if dep.Path == etcdModule {
				version = dep.Version
			}
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return err
	}
	dir := filepath.Join(cache, "leasehold", "etcd-"+version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	_, src, _, ok := runtime.Caller(0)
	if !ok {
		return fmt.Errorf("campaign: the source directory of the faults module is unknown")
	}
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("campaign: build etcd: the faults module's source is not here (%v)", err)
	}
	tmp, err := os.CreateTemp(dir, ".etcd-*")
	if err != nil {
		return err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", tmp.Name(), etcdModule)
	cmd.Dir = filepath.Dir(src)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("campaign: go build %s: %v\n%s", etcdModule, err, out)
	}
	// A rename: a concurrent build or reader sees the whole binary or none.
	return os.Rename(tmp.Name(), filepath.Join(dir, "etcd"))
}
