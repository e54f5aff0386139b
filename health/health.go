package health

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
)

// A Check reports nil when healthy and an error saying why otherwise.
type Check func(ctx context.Context) error

// maxLine bounds the output quoted in an error.
const maxLine = 200

// Shell returns a Check that runs script with /bin/sh -c.
func Shell(script string) Check {
	if strings.TrimSpace(script) == "" {
		return failed(errors.New("health: Shell: script is empty"))
	}
	return run("sh -c "+quote(script), "/bin/sh", "-c", script)
}

// Command returns a Check that runs the program name with args.
func Command(name string, args ...string) Check {
	if name == "" {
		return failed(errors.New("health: Command: name is empty"))
	}
	return run(name, name, args...)
}

func failed(err error) Check {
	return func(context.Context) error { return err }
}

func quote(s string) string {
	if len(s) > maxLine {
		s = s[:maxLine] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// tail keeps the last bytes written, enough to find the last line.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 4*maxLine {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-4*maxLine:]...)
	}
	return len(p), nil
}

func (t *tail) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := bytes.TrimRight(t.buf, "\r\n \t")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	if len(b) > maxLine {
		b = b[len(b)-maxLine:]
	}
	return string(b)
}

func run(label, name string, args ...string) Check {
	return func(ctx context.Context) error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("health: %s: not run: %w", label, err)
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			return fmt.Errorf("health: %s: %w", label, err)
		}
		cmd := exec.Command(name, args...)
		// An *os.File, not a buffer, so Wait returns when the program
		// exits even if a background child still holds the pipe open.
		cmd.Stdout, cmd.Stderr = pw, pw
		ownGroup(cmd)
		if err := cmd.Start(); err != nil {
			pr.Close()
			pw.Close()
			return fmt.Errorf("health: %s: %w", label, err)
		}
		pw.Close()
		pid := cmd.Process.Pid
		// Killing the group on return also closes every writer of the
		// pipe, so the reader below ends.
		defer killGroup(cmd, pid)

		var out tail
		read := make(chan struct{})
		go func() {
			io.Copy(&out, pr)
			pr.Close()
			close(read)
		}()
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()

		var werr error
		select {
		case werr = <-waited:
		case <-ctx.Done():
			killGroup(cmd, pid)
			<-waited
			killGroup(cmd, pid)
			<-read
			return fmt.Errorf("health: %s: stopped: %w", label, ctx.Err())
		}
		killGroup(cmd, pid)
		<-read
		if werr == nil {
			return nil
		}
		var xerr *exec.ExitError
		if errors.As(werr, &xerr) {
			return fmt.Errorf("health: %s: %s; last output: %q", label, xerr.ProcessState, out.lastLine())
		}
		return fmt.Errorf("health: %s: %w", label, werr)
	}
}

// URL returns a Check that GETs rawURL; a 2xx status is healthy. Errors
// show the URL with any password masked.
func URL(rawURL string) Check {
	u, err := parseURL("health: URL", rawURL)
	if err != nil {
		return failed(err)
	}
	shown := u.Redacted()
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return fmt.Errorf("health: URL %s: %v", shown, scrub(err, u))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return fmt.Errorf("health: URL %s: no status: %w", shown, cerr)
			}
			return fmt.Errorf("health: URL %s: no status: %v", shown, scrub(err, u))
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("health: URL %s: status %s", shown, resp.Status)
		}
		return nil
	}
}

// scrub keeps a transport error from quoting the URL with its password.
func scrub(err error, u *url.URL) string {
	s := err.Error()
	if u.User != nil {
		s = strings.ReplaceAll(s, u.String(), u.Redacted())
		if p, ok := u.User.Password(); ok && p != "" {
			s = strings.ReplaceAll(s, p, "xxxxx")
		}
	}
	return s
}

// CheckURL checks rawURL as URL takes it: http or https, with a host, so that a
// configuration is refused when it is read rather than at the first check. name is how the
// caller's user wrote it (`parameter "healthUrl"`, "--health-url") and starts the error,
// which never shows the URL's password.
func CheckURL(name, rawURL string) error {
	_, err := parseURL(name, rawURL)
	return err
}

// parseURL parses a health check's URL; its errors start with name.
func parseURL(name, rawURL string) (*url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot parse the URL %s", name, redactRaw(rawURL))
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%s %s: the scheme must be http or https", name, u.Redacted())
	case u.Host == "":
		return nil, fmt.Errorf("%s %s: no host", name, u.Redacted())
	}
	return u, nil
}

// redactRaw quotes a URL that does not parse, hiding what may be a password: anything between
// "://" and the last "@" of its authority.
func redactRaw(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		return strconv.Quote(s)
	}
	rest := s[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
		return strconv.Quote(s[:i+3] + "xxxxx" + rest[at:])
	}
	return strconv.Quote(s)
}
