package proctest

import (
	"sync"
	"testing"
	"time"
)

// TestInboxOrder: Take returns the messages in the order they were put and reports false when
// the queue is empty; Put never blocks, also with many messages pending and no taker.
func TestInboxOrder(t *testing.T) {
	b := NewInbox[int]()
	if m, ok := b.Take(); ok {
		t.Fatalf("Take on an empty inbox = %d, true; want false", m)
	}
	const n = 1000
	for i := range n {
		b.Put(i)
	}
	for i := range n {
		m, ok := b.Take()
		if !ok || m != i {
			t.Fatalf("Take #%d = %d, %v; want %d, true", i, m, ok, i)
		}
	}
	if m, ok := b.Take(); ok {
		t.Fatalf("Take after draining = %d, true; want false", m)
	}
}

// TestInboxNotify: a Put after a Take that found nothing leaves a token on Notify, so a taker
// waiting there wakes up; many Puts leave one token, not one each.
func TestInboxNotify(t *testing.T) {
	b := NewInbox[string]()
	b.Put("a")
	b.Put("b")
	select {
	case <-b.Notify():
	default:
		t.Fatal("no token on Notify after Put")
	}
	select {
	case <-b.Notify():
		t.Fatal("a second token on Notify: Put must not queue one per message")
	default:
	}
	if m, _ := b.Take(); m != "a" {
		t.Fatalf("Take = %q, want a", m)
	}
	if m, _ := b.Take(); m != "b" {
		t.Fatalf("Take = %q, want b", m)
	}
}

// TestInboxTakeWait: TakeWait returns messages put by concurrent writers (the workers'
// readers), each once, waiting on Notify instead of polling. Run under -race.
func TestInboxTakeWait(t *testing.T) {
	b := NewInbox[int]()
	const writers, each = 4, 250
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				b.Put(w*each + i)
			}
		}()
	}
	seen := make(map[int]bool, writers*each)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range writers * each {
			seen[b.TakeWait()] = true
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // bounds a failing test only: TakeWait lost a wake-up
		t.Fatal("TakeWait did not return every message within 10s")
	}
	wg.Wait()
	if len(seen) != writers*each {
		t.Fatalf("TakeWait returned %d distinct messages, want %d", len(seen), writers*each)
	}
	if m, ok := b.Take(); ok {
		t.Fatalf("Take after all were taken = %d, true; want false", m)
	}
}
