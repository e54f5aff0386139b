package azblob

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/leasehold/leasehold/internal/cloudemu"
	"github.com/leasehold/leasehold/internal/testenv"
)

// connEnv is the environment variable the tests' URLs name (connection_string_env): it holds
// the connection string of the package's Azurite.
const connEnv = "LEASEHOLD_TEST_AZURITE_CONNECTION"

// emu is the Azurite the package's tests share, started by the first test that needs it and
// stopped by TestMain. Tests that stop or pause an emulator start one of their own.
var emu struct {
	once sync.Once
	dir  string
	e    *cloudemu.Emulator
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if emu.e != nil {
		emu.e.Close()
	}
	if emu.dir != "" {
		os.RemoveAll(emu.dir)
	}
	os.Exit(code)
}

// emulator returns the package's Azurite, starting it on first use; the test skips when
// Azurite is not installed (fails with LEASEHOLD_REQUIRE_SERVERS=1).
func emulator(t testing.TB) *cloudemu.Emulator {
	t.Helper()
	emu.once.Do(func() {
		emu.dir, emu.err = os.MkdirTemp("", "leasehold-azblob-")
		if emu.err != nil {
			return
		}
		emu.e, emu.err = cloudemu.Start(context.Background(), cloudemu.Azure, emu.dir)
		if emu.err == nil {
			emu.err = os.Setenv(connEnv, emu.e.AzureConnectionString())
		}
	})
	if errors.Is(emu.err, cloudemu.ErrUnavailable) {
		testenv.Unavailable(t, emu.err.Error())
	}
	if emu.err != nil {
		t.Fatal(emu.err)
	}
	return emu.e
}

// newContainer creates a container no other test uses in e, deleted when the test ends.
func newContainer(t testing.TB, e *cloudemu.Emulator) string {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	name := "t" + hex.EncodeToString(b)
	c := adminClient(t, e, name)
	if _, err := c.Create(t.Context(), nil); err != nil {
		t.Fatalf("create container %s: %v\n%s", name, err, e.Log())
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := c.Delete(ctx, nil); err != nil && e.Member.Running() && !bloberror.HasCode(err, bloberror.ContainerNotFound) {
			t.Errorf("delete container %s: %v", name, err)
		}
	})
	return name
}

// adminClient is a client of container name in e, with the emulator's key: the tests' own
// view of the blobs, beside the store's.
func adminClient(t testing.TB, e *cloudemu.Emulator, name string) *container.Client {
	t.Helper()
	c, err := container.NewClientFromConnectionString(e.AzureConnectionString(), name, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testURL returns the URL of a store in a fresh container of the package's Azurite, under
// the prefix "leases/", and the container's name.
func testURL(t testing.TB) (string, string) {
	t.Helper()
	e := emulator(t)
	name := newContainer(t, e)
	return emulatorURL(name, "leases/", url.Values{"connection_string_env": {connEnv}}), name
}

// emulatorURL is the store URL of container name with prefix and parameters q, in the
// emulator's well-known account.
func emulatorURL(name, prefix string, q url.Values) string {
	u := url.URL{Scheme: Scheme, Host: cloudemu.AzureAccount, Path: "/" + name + "/" + prefix, RawQuery: q.Encode()}
	return u.String()
}

// openTest opens a store on a fresh container, closed when the test ends.
func openTest(t testing.TB) *Store {
	t.Helper()
	raw, _ := testURL(t)
	return openRaw(t, raw)
}

// openRaw opens the store of raw, closed when the test ends.
func openRaw(t testing.TB, raw string) *Store {
	t.Helper()
	s, err := Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// mustEnv returns the connection string of the package's Azurite.
func mustEnv(t testing.TB) string {
	t.Helper()
	v := os.Getenv(connEnv)
	if v == "" {
		t.Fatal(fmt.Sprintf("%s is not set", connEnv))
	}
	return v
}
