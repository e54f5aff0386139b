// Package kubetest runs a real control plane for the kubernetes module's tests: etcd and
// kube-apiserver built from their Go modules by scripts/kube-binaries, on loopback, with TLS,
// RBAC, and two static-token users: an admin (system:masters) and a restricted user that only
// gets the permissions a test grants it.
package kubetest

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// AssetsEnv names the environment variable giving the directory that holds the kube-apiserver
// and etcd binaries (what scripts/kube-binaries prints).
const AssetsEnv = "LEASEHOLD_KUBE_ASSETS"

// RequireEnv, set to 1, makes missing binaries a test failure instead of a skip (CI).
const RequireEnv = "LEASEHOLD_REQUIRE_KUBE"

// PendingEnv names a file that appears when a build of the binaries into $LEASEHOLD_KUBE_ASSETS
// has ended, holding 0 when it succeeded: scripts/test builds kube-apiserver in the background
// and starts the modules that use it before the build is over, so that their compilation and
// their other tests overlap the build. FindBinaries waits for that file while the binaries
// are not there yet.
const PendingEnv = "LEASEHOLD_KUBE_PENDING"

// pendingWait bounds the wait for a pending build, and pendingPoll is how often the file is
// looked for.
const (
	pendingWait = 30 * time.Minute
	pendingPoll = time.Second
)

// UserName is the restricted user's name; RBAC rules bind to it.
const UserName = "leasehold-elector"

// FindBinaries returns the directory holding kube-apiserver and etcd: $LEASEHOLD_KUBE_ASSETS,
// else the newest one scripts/kube-binaries built in the user cache dir. The error says how to
// get them.
func FindBinaries() (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"kube-apiserver", "etcd"} {
			if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.IsDir() {
				return false
			}
		}
		return true
	}
	if dir := os.Getenv(AssetsEnv); dir != "" {
		if pending := os.Getenv(PendingEnv); pending != "" && !has(dir) {
			if err := waitBuild(pending); err != nil {
				return "", err
			}
		}
		if !has(dir) {
			return "", fmt.Errorf("%s=%s does not hold kube-apiserver and etcd (run scripts/kube-binaries)", AssetsEnv, dir)
		}
		return dir, nil
	}
	root := os.Getenv("LEASEHOLD_KUBE_CACHE")
	if root == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no kube-apiserver: %s is not set and there is no user cache dir (%v)", AssetsEnv, err)
		}
		root = filepath.Join(cache, "leasehold")
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "kube-*-etcd-*"))
	slices.Sort(dirs)
	for i := len(dirs) - 1; i >= 0; i-- {
		if has(dirs[i]) {
			return dirs[i], nil
		}
	}
	return "", fmt.Errorf("no kube-apiserver: %s is not set and %s holds no build (run scripts/kube-binaries and set %s to the directory it prints)", AssetsEnv, root, AssetsEnv)
}

// waitBuild waits for the file of a pending build (PendingEnv) and returns an error unless it
// says the build succeeded.
func waitBuild(path string) error {
	deadline := time.Now().Add(pendingWait)
	for {
		b, err := os.ReadFile(path)
		switch {
		case err == nil && strings.TrimSpace(string(b)) == "0":
			return nil
		case err == nil:
			return fmt.Errorf("the build of kube-apiserver failed (%s=%s holds %q; scripts/test prints the build's output)", PendingEnv, path, strings.TrimSpace(string(b)))
		case !errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("%s: %w", PendingEnv, err)
		case time.Now().After(deadline):
			return fmt.Errorf("the build of kube-apiserver did not end within %v (%s=%s)", pendingWait, PendingEnv, path)
		}
		time.Sleep(pendingPoll)
	}
}

// Env is a running control plane: one etcd and one API server on top of it.
type Env struct {
	etcd *process
	API  *APIServer
}

// Start runs etcd then the API server, with their data and logs under dir (which the caller
// removes), and returns once the API server is ready.
func Start(dir, binDir string) (*Env, error) {
	clientPort, err := freePort()
	if err != nil {
		return nil, err
	}
	peerPort, err := freePort()
	if err != nil {
		return nil, err
	}
	client := "http://127.0.0.1:" + portString(clientPort)
	peer := "http://127.0.0.1:" + portString(peerPort)
	etcd, err := startProcess("etcd", filepath.Join(dir, "etcd.log"), filepath.Join(binDir, "etcd"),
		"--name=kubetest", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=kubetest="+peer,
		"--unsafe-no-fsync", "--log-level=warn")
	if err != nil {
		return nil, err
	}
	err = etcd.waitReady(30*time.Second, func() error {
		resp, err := http.Get(client + "/health")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/health: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		etcd.kill()
		return nil, err
	}
	api, err := startAPIServer(dir, binDir, client)
	if err != nil {
		etcd.kill()
		return nil, err
	}
	return &Env{etcd: etcd, API: api}, nil
}

// Stop stops the API server, then etcd: the API server is never left without its storage.
func (e *Env) Stop() {
	e.API.Stop()
	e.etcd.stop(10 * time.Second)
}

// APIServer is a running kube-apiserver.
type APIServer struct {
	// Host is its URL (https://127.0.0.1:PORT); CAData the PEM of the CA that signed its
	// serving certificate.
	Host   string
	CAData []byte
	// AdminToken authenticates as a member of system:masters; UserToken as UserName, who has
	// only what RBAC rules grant it.
	AdminToken, UserToken string

	bin, logPath string
	args         []string
	proc         *process
}

func startAPIServer(dir, binDir, etcdURL string) (*APIServer, error) {
	p, err := writePKI(dir)
	if err != nil {
		return nil, err
	}
	s := &APIServer{CAData: p.caPEM, AdminToken: rand.Text(), UserToken: rand.Text(),
		bin: filepath.Join(binDir, "kube-apiserver"), logPath: filepath.Join(dir, "kube-apiserver.log")}
	tokens := filepath.Join(dir, "tokens.csv")
	csv := fmt.Sprintf("%s,kubetest-admin,1000,\"system:masters\"\n%s,%s,1001\n", s.AdminToken, s.UserToken, UserName)
	if err := os.WriteFile(tokens, []byte(csv), 0o600); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s.Host = "https://127.0.0.1:" + portString(port)
	s.args = []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + portString(port),
		"--tls-cert-file=" + p.certFile, "--tls-private-key-file=" + p.keyFile,
		"--cert-dir=" + filepath.Join(dir, "certs"),
		"--token-auth-file=" + tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.saPubFile, "--service-account-signing-key-file=" + p.saKeyFile,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--enable-priority-and-fairness=false", "--profiling=false",
		// The "kubernetes" Service's endpoints cannot be a loopback address; nothing here uses it.
		"--endpoint-reconciler-type=none",
	}
	if err := s.Restart(); err != nil {
		return nil, err
	}
	return s, nil
}

// Restart starts the API server again after Kill or Stop, with the same address, flags,
// certificates and tokens (so existing clients reconnect), and returns once it is ready.
func (s *APIServer) Restart() error {
	if s.proc != nil {
		select {
		case <-s.proc.exited:
		default:
			return errors.New("kubetest: Restart of a running kube-apiserver")
		}
	}
	proc, err := startProcess("kube-apiserver", s.logPath, s.bin, s.args...)
	if err != nil {
		return err
	}
	s.proc = proc
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.CAData)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer hc.CloseIdleConnections()
	err = proc.waitReady(90*time.Second, func() error {
		req, _ := http.NewRequest(http.MethodGet, s.Host+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+s.AdminToken)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 2000))
			return fmt.Errorf("/readyz: %s: %s", resp.Status, body)
		}
		return nil
	})
	if err != nil {
		proc.kill()
	}
	return err
}

// Kill ends the API server at once (SIGKILL), as a crash would; etcd keeps its data.
func (s *APIServer) Kill() { s.proc.kill() }

// Stop ends the API server gracefully (SIGTERM, then SIGKILL after 10 s).
func (s *APIServer) Stop() { s.proc.stop(10 * time.Second) }

// Config returns a client configuration for the API server authenticating with token.
func (s *APIServer) Config(token string) *rest.Config {
	return &rest.Config{
		Host:            s.Host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.CAData},
		// The tests' bursts of requests must not wait on client-side rate limiting.
		QPS: 100, Burst: 200,
	}
}
