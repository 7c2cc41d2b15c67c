package cloudlb

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/lb"
)

func TestEventHubStreamAndResume(t *testing.T) {
	hub := NewEventHub(nil, 100)
	t0 := time.Now()
	_ = hub.Event(zdv1.Event{Time: t0, Source: zdv1.SourceLB, Type: zdv1.EventLBBackendAdded, Object: "node/a"})
	srv := httptest.NewServer(hub)
	defer srv.Close()

	var mu sync.Mutex
	var got []zdv1.Event
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- lb.SubscribeEvents(ctx, srv.URL, zdv1.EventFunc(func(e zdv1.Event) error {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, e)
			return nil
		}), nil)
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }
	waitFor(t, "the replayed event", func() bool { return count() == 1 })
	_ = hub.Event(zdv1.Event{Time: t0.Add(time.Second), Source: zdv1.SourceLB, Type: zdv1.EventLBNodeUnhealthy, Object: "node/a"})
	waitFor(t, "the live event", func() bool { return count() == 2 })

	// Break every stream: the subscriber reconnects with since= and gets only what is new.
	srv.CloseClientConnections()
	_ = hub.Event(zdv1.Event{Time: t0.Add(2 * time.Second), Source: zdv1.SourceLB, Type: zdv1.EventLBBackendRemoved, Object: "node/a"})
	waitFor(t, "the event after the reconnect", func() bool { return count() == 3 })
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	if len(got) != 3 || got[2].Type != zdv1.EventLBBackendRemoved {
		t.Fatalf("events = %+v, want 3 without duplicates", got)
	}
	mu.Unlock()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("lb.SubscribeEvents returned %v, want context.Canceled", err)
	}
}

func TestSubscribeEventsSinkError(t *testing.T) {
	hub := NewEventHub(nil, 10)
	_ = hub.Event(zdv1.Event{Time: time.Now(), Type: zdv1.EventNote})
	srv := httptest.NewServer(hub)
	defer srv.Close()
	boom := errors.New("disk full")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := lb.SubscribeEvents(ctx, srv.URL, zdv1.EventFunc(func(zdv1.Event) error { return boom }), nil)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the sink's error", err)
	}
}
