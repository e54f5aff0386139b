// Command poller is the quick start of the README in full: a service that polls every interval
// on the leader only, elected over a shared Registry. Its configuration is app.json in the
// working directory, or the file named by its one argument.
package main

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cluster"
	_ "github.com/leasehold/leasehold/store/postgres" // registers Webda/PostgresStore
)

// Poller polls every Interval while this instance leads.
type Poller struct {
	Interval leasehold.Duration `json:"interval"` // milliseconds, or "10s"
}

func (p *Poller) Init(ctx context.Context, app *leasehold.Application) error {
	app.WhenLeader(func(ctx context.Context) error {
		// This instance became the leader: poll until the leadership ends.
		go func() {
			tick := time.NewTicker(p.Interval.D())
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return // it lost the leadership, or is shutting down
				case <-tick.C:
					term, _ := cluster.TermOf(ctx) // a fencing token for writes elsewhere
					p.poll(ctx, term)
				}
			}
		}()
		return nil
	}, func() {
		// It lost the leadership, or is shutting down: fn's context is already cancelled.
	})
	return nil
}

// poll is the work done once for the whole application; term tells a write made for it from
// a write made by an earlier leader.
func (p *Poller) poll(ctx context.Context, term uint64) {
	log.Printf("polled in term %d", term)
}

func init() {
	leasehold.RegisterServiceType("MyApp/Poller", func() leasehold.Service { return &Poller{} })
}

func main() {
	path := "app.json"
	if len(os.Args) > 1 {
		path = os.Args[1]
	}
	cfg, err := leasehold.LoadConfig(path)
	if err != nil {
		log.Fatal(err)
	}
	app, err := leasehold.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Start(ctx); err != nil {
		log.Fatal(err)
	}
	<-ctx.Done()
	// Ends the leadership first (deregistered runs, the lease is released), then stops the services.
	if err := app.Stop(context.Background()); err != nil {
		log.Print(err)
	}
}
