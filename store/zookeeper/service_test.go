//go:build unix

package zookeeper

import (
	"testing"

	"github.com/leasehold/leasehold/servicetest"
)

// TestServiceType: Webda/ZooKeeperStore is registered, decodes its parameters strictly (A2),
// opens the store in Init without an application, works as a store.Store under the chroot its
// URL names, closes it in Stop, refuses bad parameters naming them and never the password, and
// works as an application's Registry (A4); see package servicetest.
func TestServiceType(t *testing.T) {
	t.Parallel()
	servicetest.Run(t, servicetest.Case[*Store]{
		Type: ServiceType,
		Setup: func(t *testing.T) (map[string]any, func(*testing.T, *Store, string)) {
			raw, chroot := serverURL(t)
			return map[string]any{"url": raw, "session_timeout": "3s"}, func(t *testing.T, st *Store, key string) {
				if st.Chroot() != chroot {
					t.Errorf("chroot %q, want %q", st.Chroot(), chroot)
				}
				if _, _, err := st.Conn().Get(st.Path(key)); err != nil || st.Path(key) != chroot+"/"+keyEscaper.Escape(key) {
					t.Errorf("document not at %s under the chroot %s: %v", st.Path(key), chroot, err)
				}
			}
		},
		Unknown: "prefix",
		Secret:  "secretpw1",
		Bad: map[string]string{
			`{}`:                          `"url" is required`,
			`{"url": "postgres://x@y/z"}`: `"url"`,
			`{"url": "not a url at all"}`: `"url"`,
			`{"url": "zk://127.0.0.1:2181/x?nonsense=1"}`:                 `nonsense`,
			`{"url": "zk://u:secretpw1@127.0.0.1:2181/x"}`:                `password`,
			`{"url": "zk://127.0.0.1:2181/x", "acl": "nobody"}`:           `acl`,
			`{"url": "zk://127.0.0.1:2181/x", "session_timeout": "soon"}`: `session_timeout`,
		},
	})
}
