// Package kube is what a scenario does to a cluster, each step bounded by a
// timeout, recorded as a run-file event, and failing with what it waited
// for and what it saw last: apply objects, wait for rollouts and load
// balancer addresses, restart a rollout, cordon and drain nodes, and flip the
// echo server's readiness through the API server's pod proxy.
package kube

import (
	"context"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/internal/waitfor"
)

// Client bundles what every step needs: the clientset, where events go, and
// the clock.
type Client struct {
	cs   Interface
	sink zdv1.EventSink
	now  func() time.Time
}

// Option configures a Client.
type Option func(*Client)

// WithEventSink records every step as an event.
func WithEventSink(s zdv1.EventSink) Option { return func(c *Client) { c.sink = s } }

// New wraps a clientset.
func New(cs Interface, opts ...Option) *Client {
	c := &Client{cs: cs, sink: zdv1.Discard, now: time.Now}
	for _, o := range opts {
		o(c)
	}
	return c
}

func (c *Client) emit(typ, object, msg string, fields map[string]string) {
	_ = c.sink.Event(zdv1.Event{Time: c.now(), Source: zdv1.SourceHarness, Type: typ, Object: object, Message: msg, Fields: fields})
}

// ErrTimeout is wrapped by every wait that ran out of time.
var ErrTimeout = waitfor.ErrTimeout

// poll is the harness's one poller (internal/waitfor).
func poll(ctx context.Context, what string, timeout, interval time.Duration, cond waitfor.Cond) error {
	return waitfor.Until(ctx, what, timeout, interval, cond)
}
