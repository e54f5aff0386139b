package dynamodb

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// dynaliteProxy is an HTTP proxy in front of dynalite that forwards a request only once it has
// read the whole of it, and forwards it on a context of its own.
//
// Emulator gap: dynalite (4.0.0) throws, and exits, when a client closes its connection while
// dynalite is still reading a request (index.js: req.on('error', function (err) { throw err })).
// Go's HTTP client closes the connection when a call's context ends, which may be between the
// headers and the body: the calls that linearize.Run and the conformance suite cut short with
// deadlines of microseconds kill the emulator. DynamoDB itself drops such a request. The proxy
// keeps those cuts from dynalite: a request the client abandons before its end never reaches
// it, one read whole reaches it whole, whatever the client does next (its outcome is then
// unknown to the client, as it would be with DynamoDB).
//
// The proxy is also where the retry tests (retry_test.go) inject their faults: inject, when not
// nil, sees each request's operation (X-Amz-Target without its prefix, "PutItem") and body
// before it is forwarded, and may answer it itself (returning true), or have it forwarded and
// its answer replaced (after, when it returns one).
type dynaliteProxy struct {
	target string
	srv    *httptest.Server
	client *http.Client

	mu     sync.Mutex
	inject func(op string, body []byte) (answer *injected)
	counts map[string]int // requests received, by operation
}

// injected is a fault: an answer the proxy gives instead of dynalite's, before or after
// forwarding the request.
type injected struct {
	forward bool   // forward the request to dynalite first, and drop its answer
	status  int    // the answer's status
	body    string // and body
}

func newDynaliteProxy(target string) *dynaliteProxy {
	p := &dynaliteProxy{target: target, client: &http.Client{}, counts: map[string]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	return p
}

// Endpoint is the proxy's URL, for the endpoint parameter.
func (p *dynaliteProxy) Endpoint() string { return p.srv.URL }

// Addr is the proxy's host:port.
func (p *dynaliteProxy) Addr() string { return strings.TrimPrefix(p.srv.URL, "http://") }

func (p *dynaliteProxy) Close() {
	p.srv.Close()
	p.client.CloseIdleConnections()
}

// setInject sets the fault injector (nil: none) and clears the counts.
func (p *dynaliteProxy) setInject(f func(op string, body []byte) *injected) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inject = f
	p.counts = map[string]int{}
}

// count returns how many requests of operation op the proxy received.
func (p *dynaliteProxy) count(op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[op]
}

// ops returns the operations the proxy received since the last setInject.
func (p *dynaliteProxy) ops() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ops []string
	for op := range p.counts {
		ops = append(ops, op)
	}
	return ops
}

func (p *dynaliteProxy) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client gave up on it: dynalite never sees it
	}
	op := r.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(op, '.'); i >= 0 {
		op = op[i+1:]
	}
	p.mu.Lock()
	p.counts[op]++
	inject := p.inject
	p.mu.Unlock()
	var fault *injected
	if inject != nil {
		fault = inject(op, body)
	}
	if fault != nil && !fault.forward {
		fault.write(w)
		return
	}
	req, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	req.Host = r.Host
	resp, err := p.client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if fault != nil {
		fault.write(w)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
}

func (f *injected) write(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(f.status)
	io.WriteString(w, f.body)
}
