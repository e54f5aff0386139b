package main

import (
	"context"
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
func runClientGo(we workerEnv, fail func(string, ...any) int) int {
	cfg, err := kubeConfig()
	if err != nil {
		return fail("%v", err)
	}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt} }
	cs, err := k8s.NewForConfig(cfg)
	if err != nil {
		return fail("%s: %v", envKubeHost, err)
	}
	var term uint64 // only written by the callbacks, which client-go runs one after the other
	leading := false
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: we.lease, Namespace: os.Getenv(envKubeNS)},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: we.id},
		},
		LeaseDuration:   we.l,
		RenewDeadline:   (we.l + we.r) / 2,
		RetryPeriod:     we.r,
		ReleaseOnCancel: true,
		Name:            we.lease,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				term++
				leading = true
				out(proctest.Line{Instance: we.id, Kind: proctest.KindLead, Term: term, T: proctest.Now()})
			},
			OnStoppedLeading: func() {
				if leading {
					leading = false
					out(proctest.Line{Instance: we.id, Kind: proctest.KindUnlead, Term: term, T: proctest.Now(), Reason: "stopped"})
				}
			},
		},
	})
	if err != nil {
		return fail("%v", err)
	}
	serveStats(we.id)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		le.Run(ctx)
	}()
	out(proctest.Line{Instance: we.id, Kind: proctest.KindReady, T: proctest.Now()})
	waitTerm()
	cancel() // ReleaseOnCancel: Run releases the lease before it returns
	select {
	case <-done:
	case <-time.After(we.l):
		out(proctest.Line{Instance: we.id, Kind: proctest.KindStopped, T: proctest.Now(), Reason: "Run did not return within L"})
		return exitStopErr
	}
	out(proctest.Line{Instance: we.id, Kind: proctest.KindStopped, T: proctest.Now(), Reason: "ok"})
	return exitOK
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
func runEtcd(we workerEnv, fail func(string, ...any) int) int {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   strings.Split(we.url, ","),
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{
			grpc.WithChainUnaryInterceptor(countUnary),
			grpc.WithChainStreamInterceptor(countStream),
		},
	})
	if err != nil {
		return fail("%s: %v", envURL, err)
	}
	defer cli.Close()
	ttl := int((we.l + time.Second - 1) / time.Second)
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(ttl))
	if err != nil {
		return fail("session: %v", err)
	}
	el := concurrency.NewElection(sess, "/leasehold-bench/"+we.lease)
	serveStats(we.id)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	won := make(chan error, 1)
	go func() { won <- el.Campaign(ctx, we.id) }()
	out(proctest.Line{Instance: we.id, Kind: proctest.KindReady, T: proctest.Now()})

	leading := false
	for {
		select {
		case err := <-won:
			if err != nil {
				return fail("campaign: %v", err)
			}
			leading = true
			out(proctest.Line{Instance: we.id, Kind: proctest.KindLead, Term: uint64(el.Rev()), T: proctest.Now()})
		case <-sess.Done():
			if leading {
				out(proctest.Line{Instance: we.id, Kind: proctest.KindUnlead, Term: uint64(el.Rev()), T: proctest.Now(), Reason: "session"})
			}
			return fail("the session's lease expired")
		case <-term:
			stopCtx, stop := context.WithTimeout(context.Background(), we.l)
			defer stop()
			if leading {
				if err := el.Resign(stopCtx); err != nil {
					out(proctest.Line{Instance: we.id, Kind: proctest.KindStopped, T: proctest.Now(), Reason: "resign: " + err.Error()})
					return exitStopErr
				}
				out(proctest.Line{Instance: we.id, Kind: proctest.KindUnlead, Term: uint64(el.Rev()), T: proctest.Now(), Reason: "stop"})
			}
			cancel() // a pending Campaign deletes its key
			if err := sess.Close(); err != nil {
				out(proctest.Line{Instance: we.id, Kind: proctest.KindStopped, T: proctest.Now(), Reason: "session close: " + err.Error()})
				return exitStopErr
			}
			out(proctest.Line{Instance: we.id, Kind: proctest.KindStopped, T: proctest.Now(), Reason: "ok"})
			return exitOK
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
