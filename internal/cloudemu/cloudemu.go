//go:build unix

// Package cloudemu starts the emulators of the cloud stores on loopback, for the tests of the
// cloud store modules, the fault campaign and the benchmarks: dynalite (DynamoDB), versitygw
// (S3), fake-gcs-server (Google Cloud Storage) and Azurite (Azure Blob Storage). Each runs as a
// process of its own (a storecluster.Member), so that a test can kill, pause and restart it.
//
// The emulators are installed by scripts/cloud-emulators into a directory that
// $LEASEHOLD_CLOUD_EMULATORS names (scripts/test sets it). Without it, or with a directory
// that lacks one, Start reports ErrUnavailable, so that a test skips, or fails when servers are
// required (LEASEHOLD_REQUIRE_SERVERS=1).
package cloudemu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold/internal/storecluster"
)

// Env names the directory scripts/cloud-emulators installs into.
const Env = "LEASEHOLD_CLOUD_EMULATORS"

// ErrUnavailable marks an emulator that is not installed.
var ErrUnavailable = errors.New("cloudemu: emulator unavailable")

// Kind is one of the emulated services.
type Kind string

const (
	DynamoDB Kind = "dynalite"        // DynamoDB
	S3       Kind = "versitygw"       // S3 (a gateway over a local directory)
	GCS      Kind = "fake-gcs-server" // Google Cloud Storage
	Azure    Kind = "azurite"         // Azure Blob Storage
)

// The emulators' credentials: fixed, as they are the emulators' own and guard nothing.
const (
	// AccessKey and SecretKey are the S3 root credentials versitygw is started with; dynalite
	// accepts any signature, and these as well.
	AccessKey = "leasehold-test"
	SecretKey = "leasehold-test-secret"
	// AzureAccount and AzureKey are Azurite's well-known development account.
	AzureAccount = "devstoreaccount1"
	AzureKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// dynaliteSurviveAborts is loaded before dynalite: an "aborted" request (its client closed the
// connection before sending all of it), which dynalite rethrows, is logged and dropped; any
// other uncaught error still ends the process.
const dynaliteSurviveAborts = `process.on('uncaughtException', (err) => {
  if (err && err.code === 'ECONNRESET' && err.message === 'aborted') {
    console.error('dynalite: a request aborted by its client was dropped');
    return;
  }
  console.error(err);
  process.exit(1);
});
`

// Emulator is a running emulator.
type Emulator struct {
	Kind Kind
	// Addr is the loopback host:port it listens on; Endpoint is http://Addr.
	Addr, Endpoint string
	// Member is its process: Kill, Pause, Resume and Start (again, on the same data) are the
	// faults a test may apply.
	Member *storecluster.Member
	// LogFile holds what it printed, across restarts.
	LogFile string
	// RawEndpoint, for GCS only, is fake-gcs-server's own endpoint, without the shim that
	// Endpoint goes through (see gcsShim): for the tests that show the emulator's gaps.
	RawEndpoint string

	shim *gcsShim
}

// AzureConnectionString returns the connection string of Azurite's development account at
// endpoint e.
func (e *Emulator) AzureConnectionString() string {
	return "DefaultEndpointsProtocol=http;AccountName=" + AzureAccount + ";AccountKey=" + AzureKey +
		";BlobEndpoint=" + e.Endpoint + "/" + AzureAccount + ";"
}

// CreateGCSBucket creates a bucket on a GCS emulator, which takes requests without
// credentials.
func (e *Emulator) CreateGCSBucket(ctx context.Context, name string) error {
	body := strings.NewReader(`{"name":` + strconv.Quote(name) + `}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.Endpoint+"/storage/v1/b", body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("cloudemu: create bucket %s: %w", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("cloudemu: create bucket %s: %s: %s", name, resp.Status, b)
	}
	return nil
}

// Log returns the last lines the emulator printed (at most 4 KiB), for a failure message.
func (e *Emulator) Log() string {
	b, err := os.ReadFile(e.LogFile)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	return string(b)
}

// Close stops the emulator and waits for its process to exit.
func (e *Emulator) Close() error {
	if e.shim != nil {
		e.shim.Close()
	}
	return e.Member.Kill()
}

// Dir returns the directory the emulators are installed in, or an error wrapping
// ErrUnavailable saying how to install them.
func Dir() (string, error) {
	d := os.Getenv(Env)
	if d == "" {
		return "", fmt.Errorf("%w: %s is not set; install the emulators with: export %s=$(scripts/cloud-emulators)", ErrUnavailable, Env, Env)
	}
	return d, nil
}

// binary returns the path of kind's program under the installation directory.
func binary(kind Kind) (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	var p string
	switch kind {
	case DynamoDB:
		p = filepath.Join(d, "node_modules", ".bin", "dynalite")
	case Azure:
		p = filepath.Join(d, "node_modules", ".bin", "azurite-blob")
	case S3, GCS:
		p = filepath.Join(d, "bin", string(kind))
	default:
		return "", fmt.Errorf("cloudemu: unknown emulator %q", kind)
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%w: %s: %v; install it with: export %s=$(scripts/cloud-emulators)", ErrUnavailable, kind, err, Env)
	}
	return p, nil
}

// Start starts an emulator of kind on a free loopback port, keeping its data and log under
// dir, and waits until it accepts connections or ctx ends. Close stops it.
func Start(ctx context.Context, kind Kind, dir string) (*Emulator, error) {
	bin, err := binary(kind)
	if err != nil {
		return nil, err
	}
	addr, err := storecluster.FreeAddr()
	if err != nil {
		return nil, err
	}
	host, port, _ := strings.Cut(addr, ":")
	data := filepath.Join(dir, string(kind)+"-data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, fmt.Errorf("cloudemu: %w", err)
	}
	var args []string
	var env []string
	switch kind {
	case DynamoDB:
		// dynalite throws, and exits, when a client closes its connection in the middle of a
		// request (a deadline, a reset): DynamoDB drops the request. Node runs it with a hook
		// that keeps it up through exactly that error.
		preload := filepath.Join(dir, "dynalite-survive-aborts.js")
		if err := os.WriteFile(preload, []byte(dynaliteSurviveAborts), 0o644); err != nil {
			return nil, fmt.Errorf("cloudemu: %w", err)
		}
		// Tables are ACTIVE at once (dynalite delays them by default, as DynamoDB does); data on
		// disk, so that a restart keeps it.
		args = []string{"--require", preload, bin, "--host", host, "--port", port, "--path", data,
			"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0"}
		if bin, err = exec.LookPath("node"); err != nil {
			return nil, fmt.Errorf("%w: dynalite needs node: %v", ErrUnavailable, err)
		}
	case S3:
		args = []string{"--port", addr, "posix", data}
		env = []string{"ROOT_ACCESS_KEY=" + AccessKey, "ROOT_SECRET_KEY=" + SecretKey}
	case GCS:
		args = []string{"-scheme", "http", "-host", host, "-port", port, "-backend", "filesystem",
			"-filesystem-root", data, "-public-host", addr, "-log-level", "warn"}
	case Azure:
		args = []string{"--blobHost", host, "--blobPort", port, "--location", data,
			"--skipApiVersionCheck", "--disableProductStyleUrl"}
	}
	e := &Emulator{Kind: kind, Addr: addr, Endpoint: "http://" + addr, LogFile: filepath.Join(dir, string(kind)+".log")}
	e.Member = &storecluster.Member{
		Name: string(kind),
		Addr: addr,
		Log:  e.LogFile,
		Command: func() *exec.Cmd {
			cmd := exec.Command(bin, args...)
			cmd.Dir = data
			cmd.Env = append(os.Environ(), env...)
			return cmd
		},
	}
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := e.Member.Start(sctx); err != nil {
		_ = e.Member.Kill()
		return nil, fmt.Errorf("cloudemu: %w; its log:\n%s", err, e.Log())
	}
	if kind == GCS {
		shimAddr, err := storecluster.FreeAddr()
		if err == nil {
			e.shim, err = startGCSShim(shimAddr, e.Endpoint)
		}
		if err != nil {
			_ = e.Member.Kill()
			return nil, err
		}
		e.RawEndpoint, e.Addr, e.Endpoint = e.Endpoint, shimAddr, "http://"+shimAddr
	}
	return e, nil
}
