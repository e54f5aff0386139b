package azblob

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	azblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/leasehold/leasehold/internal/cloudemu"
	"github.com/leasehold/leasehold/internal/foreigndoc"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// TestBadURL checks the errors for malformed URLs and bad parameters: each names the
// parameter or the part at fault, and is a configuration error. None of these URLs reaches a
// server.
func TestBadURL(t *testing.T) {
	t.Parallel()
	storetest.BadURLs(t, "hunter2secret", map[string]string{
		"azblob://acct1/c0ntainer?bogus=1":                                        `"bogus"`,
		"azblob://user:hunter2secret@acct1/c0ntainer":                             "user information",
		"azblob://acct1":                                                          "no container",
		"azblob://acct1/":                                                         "no container",
		"azblob://acct1/Bad_Container":                                            `"Bad_Container"`,
		"azblob://acct1/a--b":                                                     `"a--b"`,
		"azblob://ACCT/c0ntainer":                                                 `"ACCT"`,
		"azblob://acct1/c0ntainer?identity=password":                              `"identity"`,
		"azblob://acct1/c0ntainer?identity=default&connection_string_env=X":       `"connection_string_env"`,
		"azblob://acct1/c0ntainer?endpoint=ftp://host":                            `"endpoint"`,
		"azblob://acct1/c0ntainer?endpoint=http://host/acct1":                     `"endpoint"`,
		"azblob://acct1/c0ntainer?endpoint=https://host/?x=1":                     `"endpoint"`,
		"azblob://acct1/c0ntainer?connection_string_env=1BAD":                     `"connection_string_env"`,
		"azblob://acct1/c0ntainer?connection_string_env=LEASEHOLD_NO_SUCH_VAR_42": "LEASEHOLD_NO_SUCH_VAR_42",
		"azblob://acct1/c0ntainer?endpoint=https://a&endpoint=https://b":          `"endpoint"`,
		"azblob://acct1/c0ntainer/a//b":                                           `"a//b"`,
		"azblob://acct1/c0ntainer/../b":                                           `"../b"`,
		"azblob://acct1/c0ntainer#frag":                                           "fragment",
	}, func(ctx context.Context, raw string) (store.Store, error) { return Open(ctx, raw) })
}

// TestConnectionString covers the connection string and its parameters, through the
// environment (not parallel: it sets variables): AZURE_STORAGE_CONNECTION_STRING by default;
// its account must be the URL's; a malformed one, a wrong key and a wrong signature are
// configuration errors that never show the key or the signature (T4); the endpoint parameter
// wins over the string's BlobEndpoint.
func TestConnectionString(t *testing.T) {
	e := emulator(t)
	name := newContainer(t, e)
	good := e.AzureConnectionString()
	base := emulatorURL(name, "", nil)

	t.Run("DefaultVariable", func(t *testing.T) {
		t.Setenv(DefaultConnectionStringEnv, good)
		s := openRaw(t, base+"?identity=connection_string")
		if err := s.Create(t.Context(), "k", map[string]any{"a": 1}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("EndpointWins", func(t *testing.T) {
		dead := "http://" + testenv.ClosedPort(t) + "/" + cloudemu.AzureAccount
		t.Setenv("LH_AZ_CS", strings.Replace(good, e.Endpoint+"/"+cloudemu.AzureAccount, dead, 1))
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if _, err := Open(ctx, base+"?connection_string_env=LH_AZ_CS"); err == nil {
			t.Fatal("Open on the connection string's dead BlobEndpoint succeeded")
		}
		s := openRaw(t, base+"?connection_string_env=LH_AZ_CS&endpoint="+url.QueryEscape(e.Endpoint+"/"+cloudemu.AzureAccount))
		if _, err := s.Get(t.Context(), "k"); err != nil {
			t.Errorf("Get through the endpoint parameter: %v", err)
		}
	})
	t.Run("SharedAccessSignature", func(t *testing.T) {
		cred, err := azblob.NewSharedKeyCredential(cloudemu.AzureAccount, cloudemu.AzureKey)
		if err != nil {
			t.Fatal(err)
		}
		perms := sas.AccountPermissions{Read: true, Write: true, Delete: true, Create: true}
		types := sas.AccountResourceTypes{Object: true}
		qp, err := sas.AccountSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour),
			Permissions: perms.String(), ResourceTypes: types.String()}.SignWithSharedKey(cred)
		if err != nil {
			t.Fatal(err)
		}
		endpoint := "BlobEndpoint=" + e.Endpoint + "/" + cloudemu.AzureAccount + ";"
		t.Setenv("LH_AZ_SAS", endpoint+"SharedAccessSignature="+qp.Encode())
		s := openRaw(t, base+"?connection_string_env=LH_AZ_SAS")
		if err := s.Create(t.Context(), "sas", map[string]any{"a": 1}); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(t.Context(), "sas", &store.Condition{Field: "a", Value: 1}); err != nil {
			t.Fatal(err)
		}
		// A signature the service refuses.
		sig := qp.Signature()
		forged := strings.Replace(qp.Encode(), url.QueryEscape(sig), url.QueryEscape("AAAA"+sig[4:]), 1)
		t.Setenv("LH_AZ_SAS", endpoint+"SharedAccessSignature="+forged)
		_, err = Open(t.Context(), base+"?connection_string_env=LH_AZ_SAS")
		refused(t, err, "AAAA"+sig[4:], url.QueryEscape("AAAA"+sig[4:]))
	})
	t.Run("WrongKey", func(t *testing.T) {
		key := "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXk="
		t.Setenv("LH_AZ_CS", strings.Replace(good, cloudemu.AzureKey, key, 1))
		_, err := Open(t.Context(), base+"?connection_string_env=LH_AZ_CS")
		refused(t, err, key)
	})
	for name, c := range map[string]struct{ value, want string }{
		"Malformed":       {"AccountName;AccountKey", "malformed"},
		"NoKey":           {"AccountName=" + cloudemu.AzureAccount + ";BlobEndpoint=http://x", "neither"},
		"OtherAccount":    {strings.Replace(good, "AccountName="+cloudemu.AzureAccount, "AccountName=someoneelse", 1), `"someoneelse"`},
		"BadBlobEndpoint": {good + "BlobEndpoint=ftp://x;", "BlobEndpoint"},
		"KeyNotBase64":    {strings.Replace(good, cloudemu.AzureKey, "not*base64", 1), "AccountKey"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("LH_AZ_CS", c.value)
			_, err := Open(t.Context(), base+"?connection_string_env=LH_AZ_CS")
			t.Log(err)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "LH_AZ_CS") || !errors.Is(err, store.ErrConfig) {
				t.Errorf("Open: %v, want a configuration error naming LH_AZ_CS and holding %q", err, c.want)
			}
			if strings.Contains(err.Error(), cloudemu.AzureKey) || strings.Contains(err.Error(), "not*base64") {
				t.Errorf("T4: the error shows the key: %v", err)
			}
		})
	}
}

// refused checks Open's error for credentials the service refused: a configuration error
// naming the account and the container, holding none of secrets.
func refused(t *testing.T, err error, secrets ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("Open with refused credentials succeeded")
	}
	for _, s := range secrets {
		if strings.Contains(err.Error(), s) {
			t.Errorf("T4: the error shows a secret: %v", strings.ReplaceAll(err.Error(), s, "xxxxx"))
		}
	}
	if !errors.Is(err, store.ErrConfig) || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), cloudemu.AzureAccount) {
		t.Errorf("Open with refused credentials: %v, want a configuration error saying so", err)
	}
}

// TestUnreachable: an endpoint that does not answer is an error naming it, not a configuration
// error (it may come up), within Open's deadline.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	emulator(t) // the connection string
	addr := testenv.ClosedPort(t)
	q := url.Values{"connection_string_env": {connEnv}, "endpoint": {"http://" + addr + "/" + cloudemu.AzureAccount}}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	_, err := Open(ctx, emulatorURL("c0ntainer", "", q))
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), addr) || !store.NotReady(err) {
		t.Errorf("Open on a closed port: %v, want an error naming %s that may go away", err, addr)
	}
	if strings.Contains(err.Error(), cloudemu.AzureKey) {
		t.Errorf("T4: the error shows the key")
	}
}

// TestNotJSON checks that a blob holding something this store did not write is an error
// naming the key, for every operation, and is left as it is.
func TestNotJSON(t *testing.T) {
	t.Parallel()
	raw, name := testURL(t)
	s := openRaw(t, raw)
	c := adminClient(t, emulator(t), name)
	for i, v := range []string{"not json", "[1,2]", "null", `"text"`, `{"a":1} trailing`, "42", ""} {
		key := fmt.Sprintf("bad:%d", i)
		bb := c.NewBlockBlobClient(s.BlobName(key))
		if _, err := bb.UploadBuffer(t.Context(), []byte(v), &blockblob.UploadBufferOptions{}); err != nil {
			t.Fatal(err)
		}
		foreigndoc.Value(t, s, key, v, ErrNotJSON)
		resp, err := bb.DownloadStream(t.Context(), nil)
		if err != nil {
			t.Fatalf("%q holding %q: %v", key, v, err)
		}
		got := make([]byte, len(v)+1)
		n, _ := resp.Body.Read(got)
		resp.Body.Close()
		if string(got[:n]) != v {
			t.Errorf("%q holding %q changed to %q", key, v, got[:n])
		}
	}
}
