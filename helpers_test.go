package leasehold

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/memory"
)

// journal records what test services did, in order.
type journal struct {
	mu  sync.Mutex
	log []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.log = append(j.log, s)
}

func (j *journal) get() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.log...)
}

// testJournal is where the test service types write; each test resets it.
var testJournal = &journal{}

func resetJournal(t *testing.T) *journal {
	t.Helper()
	testJournal = &journal{}
	return testJournal
}

// recorder is the service type "test/Recorder": it journals Init and Stop, and fails them on
// demand.
type recorder struct {
	Name     string   `json:"name"`
	FailInit bool     `json:"failInit"`
	StopErr  string   `json:"stopErr"`
	Wait     Duration `json:"wait"`
	Tags     []string `json:"tags"`
	Count    int      `json:"count"`

	// OnInit, when set by a test before Start, runs at the end of Init.
	onInit func(ctx context.Context, app *Application)
}

func (r *recorder) Init(ctx context.Context, app *Application) error {
	testJournal.add("init " + r.Name)
	if r.FailInit {
		return errors.New("boom")
	}
	if hook := testHooks[r.Name]; hook != nil {
		hook(ctx, app)
	}
	return nil
}

func (r *recorder) Stop(context.Context) error {
	testJournal.add("stop " + r.Name)
	if r.StopErr != "" {
		return errors.New(r.StopErr)
	}
	return nil
}

// testHooks run at the end of the Init of the recorder with that name.
var testHooks = map[string]func(ctx context.Context, app *Application){}

// journaledStore is the service type "test/JournaledStore": a memory store that journals its
// writes and its Stop, to see the order of a release and of the services' stops.
type journaledStore struct {
	*memory.Store `json:"-"`
}

func (s *journaledStore) Init(context.Context, *Application) error {
	s.Store = memory.New()
	testJournal.add("init Registry")
	return nil
}

func (s *journaledStore) Stop(context.Context) error {
	testJournal.add("stop Registry")
	return nil
}

func (s *journaledStore) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	if h, ok := fields["holder"]; ok && h == "" {
		testJournal.add("release " + key)
	}
	return s.Store.Patch(ctx, key, fields, cond)
}

func init() {
	RegisterServiceType("test/Recorder", func() Service { return &recorder{} })
	RegisterServiceType("test/JournaledStore", func() Service { return &journaledStore{} })
}

// newApp parses and creates an application from a JSON configuration.
func newApp(t *testing.T, config string) *Application {
	t.Helper()
	cfg, err := ParseConfig([]byte(config))
	if err != nil {
		t.Fatal(err)
	}
	app, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return app
}

// logBuffer is a concurrency-safe log destination.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

func newDiscardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// sharedStores are memory stores that "test/SharedStore" services name, so that two
// applications in one test share a Registry as two processes share a server.
var sharedStores = map[string]*memory.Store{}

type sharedStore struct {
	Name          string `json:"name"`
	*memory.Store `json:"-"`
}

func (s *sharedStore) Init(context.Context, *Application) error {
	st, ok := sharedStores[s.Name]
	if !ok {
		return errors.New("no shared store named " + s.Name)
	}
	s.Store = st
	return nil
}

func init() {
	RegisterServiceType("test/SharedStore", func() Service { return &sharedStore{} })
}
