//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testenv"
)

// TestREADMEWhereTheRecordIs: the "Where the lease record is" commands of docs/backends.md
// read the record a running leasehold wrote, with the server's own tool, for each backend
// whose server and tool are here (Redis, PostgreSQL, MariaDB, SQLite, the file store): the names they give
// (key, prefix, table, column) are the code's.
func TestREADMEWhereTheRecordIs(t *testing.T) {
	sec := docSection(t, "docs/backends.md", "## Where the lease record is\n")
	m := regexp.MustCompile("(?s)\n```sh\n(.*?)\n```\n").FindStringSubmatch(sec)
	if m == nil {
		t.Fatal("the section has no sh block")
	}
	commands := map[string]string{} // tool: its line
	for _, l := range strings.Split(m[1], "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			commands[f[0]] = l
		}
	}
	for _, tool := range []string{"redis-cli", "psql", "mysql", "sqlite3", "etcdctl", "nats", "jq", "kubectl"} {
		if commands[tool] == "" {
			t.Errorf("the section's sh block has no %s command", tool)
		}
	}

	lease := fmt.Sprintf("readme%d", time.Now().UnixNano())
	table := "lh_readme_" + lease
	w := newWorld(t)
	sqlitePath := filepath.Join(w.dir, "registry.db")
	filePath := filepath.Join(w.dir, "registry.json")
	for _, tc := range []struct {
		tool   string
		server *testenv.Server
		store  string
		edit   func(string) string // points the documented command at the test's server and names
	}{
		{"redis-cli", &testenv.Redis, "redis://127.0.0.1:6379/0", func(c string) string {
			return strings.Replace(c, "redis-cli", "redis-cli -h 127.0.0.1 -p 6379", 1)
		}},
		{"psql", &testenv.Postgres, "postgres://postgres@127.0.0.1:5432/test?sslmode=disable&table=" + table, func(c string) string {
			return strings.Replace(strings.ReplaceAll(c, "leasehold_registry", table), "psql", "psql -h 127.0.0.1 -U postgres -d test -At", 1)
		}},
		{"mysql", &testenv.MySQL, "mysql://root@127.0.0.1:3306/test?table=" + table, func(c string) string {
			return strings.Replace(strings.ReplaceAll(c, "leasehold_registry", table), "mysql", "mysql -h 127.0.0.1 -u root -N test", 1)
		}},
		{"sqlite3", nil, "sqlite://" + sqlitePath, func(c string) string {
			return strings.ReplaceAll(c, "registry.db", shellQuote(sqlitePath))
		}},
		{"jq", nil, "file://" + filePath, func(c string) string {
			return strings.ReplaceAll(c, "~/.local/state/leasehold/registry.json", shellQuote(filePath))
		}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			if tc.server != nil {
				tc.server.URL(t) // skips without the server
			}
			if _, err := exec.LookPath(tc.tool); err != nil {
				t.Skipf("no %s here", tc.tool)
			}
			id := "readme-" + tc.tool
			p := w.start(id, []string{"LEASEHOLD_TEST_CMD=record"}, "run", "--store", tc.store, "--lease", lease,
				"--lease-duration", testLs, "--renew-interval", testRs, "--instance-id", id, "--log-format", "json", "--", os.Args[0])
			w.waitCmd(30*time.Second, "CMD-START", func(e cmdEvent) bool { return e.id == id })
			defer func() {
				_ = p.cmd.Process.Signal(syscall.SIGTERM)
				w.waitExit(p, 10*time.Second)
				if tc.tool == "psql" || tc.tool == "mysql" {
					drop := map[string][]string{"psql": {"-h", "127.0.0.1", "-U", "postgres", "-d", "test", "-c", "DROP TABLE " + table},
						"mysql": {"-h", "127.0.0.1", "-u", "root", "test", "-e", "DROP TABLE " + table}}
					_ = exec.Command(tc.tool, drop[tc.tool]...).Run()
				}
				if tc.tool == "redis-cli" {
					_ = exec.Command("redis-cli", "-h", "127.0.0.1", "-p", "6379", "DEL", "leasehold:cluster:"+lease).Run()
				}
			}()
			cmd := tc.edit(strings.ReplaceAll(commands[tc.tool], "cluster:leader", "cluster:"+lease))
			out, err := exec.Command("/bin/sh", "-c", cmd).CombinedOutput()
			if err != nil || !strings.Contains(string(out), `"holder"`) || !strings.Contains(string(out), id) {
				t.Errorf("the documented command %q (run as %q): %v; want the record held by %s:\n%s", commands[tc.tool], cmd, err, id, out)
			}
		})
	}
}
