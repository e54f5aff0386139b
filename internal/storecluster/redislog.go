//go:build unix

package storecluster

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// redisLogLines is how many of the last lines of each log a timeout error of the Redis
// cluster quotes.
const redisLogLines = 25

// LogTail returns the last n lines of the logs of the data servers and the Sentinels
// (redis-N.log, sentinel-N.log in the cluster's directory), each under its name. The servers
// log who made them a master ("MASTER MODE enabled (user request from 'id=.. addr=..')"),
// the Sentinels their view of a failover (+sdown, +odown, +failover-*, +switch-master,
// +convert-to-slave): what a test that timed out needs to tell a slow machine from a cluster
// that went another way.
func (c *RedisCluster) LogTail(n int) string {
	var b strings.Builder
	for _, m := range slices.Concat(c.members, c.sentinels) {
		fmt.Fprintf(&b, "--- %s.log, last %d lines:\n", m.Name, n)
		data, err := os.ReadFile(filepath.Join(c.dir, m.Name+".log"))
		if err != nil {
			fmt.Fprintf(&b, "(%v)\n", err)
			continue
		}
		lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		for _, l := range lines {
			b.Write(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// withLogs adds to err, the error of a wait that timed out, the tails of the cluster's logs.
func (c *RedisCluster) withLogs(err error) error {
	return &logsError{err: err, logs: c.LogTail(redisLogLines)}
}

// logsError is an error followed by the logs that explain it; it unwraps to the error.
type logsError struct {
	err  error
	logs string
}

func (e *logsError) Error() string { return e.err.Error() + "\n" + e.logs }
func (e *logsError) Unwrap() error { return e.err }
