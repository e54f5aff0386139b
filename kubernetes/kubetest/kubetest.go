// Package kubetest is the public face of the kubernetes module's test control plane
// (internal/kubetest), for programs outside the module that need a real kube-apiserver: the
// benchmarks of the bench module run leasehold's Lease lock and client-go's leader election
// against the same API server. It only delegates: the control plane is the one the module's
// own tests use.
package kubetest

import "github.com/leasehold/leasehold/kubernetes/internal/kubetest"

// AssetsEnv names the environment variable giving the directory that holds the kube-apiserver
// and etcd binaries (what scripts/kube-binaries prints).
const AssetsEnv = kubetest.AssetsEnv

// RequireEnv, set to 1, makes missing binaries an error instead of a skip (CI).
const RequireEnv = kubetest.RequireEnv

// Env is a running control plane: one etcd and one kube-apiserver on top of it, on loopback,
// with TLS and static admin and user tokens. Stop ends both.
type Env = kubetest.Env

// APIServer is a running kube-apiserver (its Host, CAData, AdminToken, UserToken, Config).
type APIServer = kubetest.APIServer

// FindBinaries returns the directory holding kube-apiserver and etcd: $LEASEHOLD_KUBE_ASSETS,
// else the newest build of scripts/kube-binaries in the user cache dir.
func FindBinaries() (string, error) { return kubetest.FindBinaries() }

// Start runs etcd then kube-apiserver from binDir, with their data and logs under dir (which
// the caller removes), and returns once the API server is ready.
func Start(dir, binDir string) (*Env, error) { return kubetest.Start(dir, binDir) }
