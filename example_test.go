package leasehold_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cluster"
)

// Poller is Webda's MyService example in Go: it polls every interval, on the leader only.
type Poller struct {
	Interval leasehold.Duration `json:"interval"` // milliseconds, or "10s"

	polled chan uint64
}

// Init registers the polling loop with the application's cluster. fn starts the loop and
// returns; the loop ends when its context does, that is when this instance stops leading.
func (p *Poller) Init(ctx context.Context, app *leasehold.Application) error {
	app.WhenLeader(func(ctx context.Context) error {
		// This instance became the leader.
		go func() {
			tick := time.NewTicker(p.Interval.D())
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return // it lost the leadership, or is shutting down
				case <-tick.C:
					term, _ := cluster.TermOf(ctx)
					p.poll(term)
				}
			}
		}()
		return nil
	}, func() {
		// It lost the leadership, or is shutting down: the loop's context is already
		// cancelled; release what fn took here.
	})
	return nil
}

func (p *Poller) poll(term uint64) {
	select {
	case p.polled <- term:
	default:
	}
}

var poller = &Poller{polled: make(chan uint64, 1)}

func init() {
	leasehold.RegisterServiceType("Example/Poller", func() leasehold.Service { return poller })
}

// A service that polls on the leader only, as in Webda's documentation. With no cluster
// service configured, the application is a single instance that always leads; add
// {"type": "Webda/StoreClusterService"} and a shared Registry to run several replicas.
func Example_poller() {
	cfg, err := leasehold.ParseConfig([]byte(`{
		"services": {
			"poller": {"type": "Example/Poller", "interval": "10ms"}
		}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	app, err := leasehold.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("polled in term", <-poller.polled)
	if err := app.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	// Output: polled in term 1
}

// Without an application, WhenLeader runs on a local cluster: a single instance, always the
// leader, so fn runs at once.
func ExampleWhenLeader() {
	done := make(chan struct{})
	remove := leasehold.WhenLeader(func(ctx context.Context) error {
		fmt.Println("leading:", leasehold.UseCluster().IsLeader())
		close(done)
		return nil
	}, func() {
		fmt.Println("deregistered")
	})
	<-done
	remove() // fn ran, so deregistered runs before remove returns
	// Output:
	// leading: true
	// deregistered
}
