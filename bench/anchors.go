package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/leasehold/leasehold/internal/proctest"
)

// runClientGo is the client-go anchor: k8s.io/client-go/tools/leaderelection with a LeaseLock,
// LeaseDuration = L, RenewDeadline = (L + R) / 2, RetryPeriod = R, ReleaseOnCancel
// sets them. Its lead line is written when OnStartedLeading starts; its unlead line when
// OnStoppedLeading runs after a leadership (client-go also calls it when it never led).
func runClientGo(w *proctest.Worker) int {
	cfg, err := kubeConfig()
	if err != nil {
		return w.Fail("%v", err)
	}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt} }
	cs, err := k8s.NewForConfig(cfg)
	if err != nil {
		return w.Fail("%s: %v", envKubeHost, err)
	}
	var term uint64 // only written by the callbacks, which client-go runs one after the other
	leading := false
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: w.Lease, Namespace: os.Getenv(envKubeNS)},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: w.ID},
		},
		LeaseDuration:   w.LeaseDuration,
		RenewDeadline:   (w.LeaseDuration + w.RenewInterval) / 2,
		RetryPeriod:     w.RenewInterval,
		ReleaseOnCancel: true,
		Name:            w.Lease,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				term++
				leading = true
				w.Report(proctest.KindLead, term, "")
			},
			OnStoppedLeading: func() {
				if leading {
					leading = false
					w.Report(proctest.KindUnlead, term, "stopped")
				}
			},
		},
	})
	if err != nil {
		return w.Fail("%v", err)
	}
	serveStats(w.ID)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		le.Run(ctx)
	}()
	w.Ready()
	<-w.Term()
	cancel() // ReleaseOnCancel: Run releases the lease before it returns
	select {
	case <-done:
	case <-time.After(w.LeaseDuration):
		return w.Stopped(errors.New("Run did not return within L"))
	}
	return w.Stopped(nil)
}

// countingTransport counts the HTTP requests of the client-go anchor.
type countingTransport struct{ next http.RoundTripper }

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	requests.Add(1)
	return c.next.RoundTrip(r)
}

// runEtcd is the etcd anchor: go.etcd.io/etcd/client/v3/concurrency's Election on a Session
// whose lease TTL is L in whole seconds (rounded up). Campaign returning is the lead line; on
// SIGTERM the leader resigns (unlead line), then the session closes, revoking its lease.
func runEtcd(w *proctest.Worker) int {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   strings.Split(w.URL, ","),
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{
			grpc.WithChainUnaryInterceptor(countUnary),
			grpc.WithChainStreamInterceptor(countStream),
		},
	})
	if err != nil {
		return w.Fail("%s: %v", proctest.EnvURL, err)
	}
	defer cli.Close()
	ttl := int((w.LeaseDuration + time.Second - 1) / time.Second)
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(ttl))
	if err != nil {
		return w.Fail("session: %v", err)
	}
	el := concurrency.NewElection(sess, "/leasehold-bench/"+w.Lease)
	serveStats(w.ID)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	won := make(chan error, 1)
	go func() { won <- el.Campaign(ctx, w.ID) }()
	w.Ready()

	leading := false
	for {
		select {
		case err := <-won:
			if err != nil {
				return w.Fail("campaign: %v", err)
			}
			leading = true
			w.Report(proctest.KindLead, uint64(el.Rev()), "")
		case <-sess.Done():
			if leading {
				w.Report(proctest.KindUnlead, uint64(el.Rev()), "session")
			}
			return w.Fail("the session's lease expired")
		case <-w.Term():
			stopCtx, stop := context.WithTimeout(context.Background(), w.LeaseDuration)
			defer stop()
			if leading {
				if err := el.Resign(stopCtx); err != nil {
					return w.Stopped(fmt.Errorf("resign: %w", err))
				}
				w.Report(proctest.KindUnlead, uint64(el.Rev()), "stop")
			}
			cancel() // a pending Campaign deletes its key
			if err := sess.Close(); err != nil {
				return w.Stopped(fmt.Errorf("session close: %w", err))
			}
			return w.Stopped(nil)
		}
	}
}

// countUnary counts the etcd anchor's unary gRPC calls.
func countUnary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	requests.Add(1)
	return invoker(ctx, method, req, reply, cc, opts...)
}

// countStream counts the messages the etcd anchor sends on its gRPC streams: the session's
// lease keep-alives and the election's watch requests.
func countStream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, err
	}
	return countedStream{s}, nil
}

type countedStream struct{ grpc.ClientStream }

func (c countedStream) SendMsg(m any) error {
	requests.Add(1)
	return c.ClientStream.SendMsg(m)
}
