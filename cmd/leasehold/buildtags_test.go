//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A binary built with fewer backends (the allow-list: leasehold_minimal and leasehold_sqlite)
// lists what it has and lacks, works with what it has, and refuses a store or a service of a
// backend it lacks with an error naming the backend and the build that has it.
func TestReducedBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds another binary")
	}
	dir := t.TempDir()
	small := filepath.Join(dir, "leasehold-small")
	build := exec.Command("go", "build", "-tags", "leasehold_minimal,leasehold_sqlite", "-o", small, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags leasehold_minimal,leasehold_sqlite: %v\n%s", err, out)
	}
	if fi, err := os.Stat(small); err == nil {
		t.Logf("the binary with the file, memory and SQLite stores only: %.1f MB", float64(fi.Size())/1e6)
	}
	run := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(small, args...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			if _, ok := err.(*exec.ExitError); !ok {
				t.Fatal(err)
			}
		}
		return out.String(), errb.String(), cmd.ProcessState.ExitCode()
	}

	out, _, code := run("version")
	if code != 0 || !strings.Contains(out, "stores: file, mem, sqlite\n") ||
		!strings.Contains(out, "built without: azblob, dynamodb, etcd, gcs, kubernetes, mysql, nats, postgres, redis, s3, zookeeper\n") {
		t.Errorf("version of the reduced build: exit %d\n%s", code, out)
	}
	if out, errOut, code := run("status", "--store", "sqlite://"+filepath.Join(dir, "r.db")); code != 3 || !strings.Contains(out, "missing") {
		t.Errorf("status over SQLite with the reduced build: exit %d, want 3 (missing)\n%s%s", code, out, errOut)
	}

	k8s := writeConfig(t, dir, "k8s.json", `"cluster": {"type": "KubernetesClusterService", "namespace": "default"}`)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"status", "--store", "etcd://user:s3cret@127.0.0.1:2379"},
			[]string{"etcd://user:xxxxx@127.0.0.1:2379", "built without the etcd backend", "go build -tags leasehold_minimal,leasehold_sqlite,leasehold_etcd"}},
		{[]string{"status", "--store", "s3://bucket/leases?region=eu-west-1"},
			[]string{"built without the s3 backend", "leasehold_minimal,leasehold_sqlite,leasehold_s3"}},
		{[]string{"status", "--store", "gs://bucket/leases"},
			[]string{"built without the gcs backend", "leasehold_minimal,leasehold_sqlite,leasehold_gcs"}},
		{[]string{"status", "--store", "zk://127.0.0.1:2181/app"},
			[]string{"built without the zookeeper backend", "leasehold_minimal,leasehold_sqlite,leasehold_zookeeper"}},
		{[]string{"run", "--store", "postgresql://db/x", "--", "true"},
			[]string{"built without the postgres backend", "leasehold_minimal,leasehold_sqlite,leasehold_postgres"}},
		{[]string{"status", "--config", k8s},
			[]string{`service "cluster" is a Webda/KubernetesClusterService`, "built without the kubernetes backend", "leasehold_minimal,leasehold_sqlite,leasehold_kubernetes"}},
	} {
		_, stderr, code := run(tc.args...)
		first, _, _ := strings.Cut(stderr, "\n")
		if code != 2 || strings.Contains(stderr, "s3cret") {
			t.Errorf("%q with the reduced build: exit %d, want 2 without the password\n%s", tc.args, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(first, w) {
				t.Errorf("%q with the reduced build: %q does not say %q", tc.args, first, w)
			}
		}
	}
}
