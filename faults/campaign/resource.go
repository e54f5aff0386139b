package campaign

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/leasehold/leasehold/internal/proctest"
)

// Action is one action a worker sent to the fenced resource, as the resource saw it.
type Action struct {
	Instance string `json:"instance"`
	Term     uint64 `json:"term"`
	Sent     int64  `json:"sent"` // the worker's stamp, taken before it checked IsLeader
	Recv     int64  `json:"recv"` // when the resource handled it
	Accepted bool   `json:"accepted"`
}

// resource is the fenced resource: a small HTTP service on loopback that accepts an action
// unless its term is lower than the highest term it has seen (W8: the term is a fencing
// token). It records every action.
type resource struct {
	ln  net.Listener
	srv *http.Server

	mu      sync.Mutex
	highest uint64
	actions []Action
}

func startResource() (*resource, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &resource{ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /act", r.act)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *resource) addr() string { return r.ln.Addr().String() }

func (r *resource) act(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	term, err1 := strconv.ParseUint(q.Get("t"), 10, 64)
	sent, err2 := strconv.ParseInt(q.Get("s"), 10, 64)
	if q.Get("i") == "" || errors.Join(err1, err2) != nil {
		http.Error(w, "want i, t and s", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	a := Action{Instance: q.Get("i"), Term: term, Sent: sent, Recv: proctest.Now(), Accepted: term >= r.highest}
	if a.Accepted {
		r.highest = term
	}
	r.actions = append(r.actions, a)
	r.mu.Unlock()
	if !a.Accepted {
		http.Error(w, "stale term", http.StatusConflict)
	}
}

// Actions returns a copy of the actions recorded so far, in the order they were handled.
func (r *resource) Actions() []Action {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Action(nil), r.actions...)
}

func (r *resource) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
	_ = r.srv.Close()
}
