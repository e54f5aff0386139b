//go:build unix

package storecluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// The Redis starter speaks to its servers and Sentinels with the few commands it needs, over
// RESP2 (the protocol every Redis server and Sentinel answers on a new connection): a command
// is an array of bulk strings; a reply is a simple string, an error, an integer, a bulk string
// (nil: -1) or an array of replies.

// respError is an error reply ("-ERR ...", "-NOGOODSLAVE ...").
type respError string

func (e respError) Error() string { return string(e) }

// respDo sends one command to addr on a new connection and returns its reply: a string, an
// int64, nil, a []any, or a respError as the error.
func respDo(ctx context.Context, addr string, args ...string) (any, error) {
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(c, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if dl, ok := c.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return nil, err
	}
	return respRead(bufio.NewReader(conn))
}

// respRead reads one reply.
func respRead(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, errors.New("storecluster: empty RESP line")
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, respError(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = respRead(r); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("storecluster: unexpected RESP line %q", line)
}

// respInfo runs INFO section on addr and returns its fields.
func respInfo(ctx context.Context, addr, section string) (map[string]string, error) {
	v, err := respDo(ctx, addr, "INFO", section)
	if err != nil {
		return nil, err
	}
	s, _ := v.(string)
	out := map[string]string{}
	for _, line := range strings.Split(s, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out, nil
}
