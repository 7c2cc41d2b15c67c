// Package kube is what a scenario does to a cluster, each step bounded by a
// timeout, recorded as a run-file event, and failing with what it waited
// for and what it saw last: apply objects, wait for rollouts and load
// balancer addresses, restart a rollout, cordon and drain nodes, and flip the
// echo server's readiness through the API server's pod proxy.
package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"zerodrop/harness/runfile"
)

// Client bundles what every step needs: the clientset, where events go, and
// the clock.
type Client struct {
	cs   Interface
	sink runfile.EventSink
	now  func() time.Time
}

// Option configures a Client.
type Option func(*Client)

// WithEventSink records every step as an event.
func WithEventSink(s runfile.EventSink) Option { return func(c *Client) { c.sink = s } }

// New wraps a clientset.
func New(cs Interface, opts ...Option) *Client {
	c := &Client{cs: cs, sink: runfile.Discard, now: time.Now}
	for _, o := range opts {
		o(c)
	}
	return c
}

func (c *Client) emit(typ, object, msg string, fields map[string]string) {
	_ = c.sink.Event(runfile.Event{Time: c.now(), Source: runfile.SourceHarness, Type: typ, Object: object, Message: msg, Fields: fields})
}

// ErrTimeout is wrapped by every wait that ran out of time.
var ErrTimeout = errors.New("timed out")

// poll runs cond every interval until it reports done, returns an error, or
// timeout passes; the timeout error names what was awaited and the last
// state seen, so a failure says where things stood.
func poll(ctx context.Context, what string, timeout, interval time.Duration, cond func(ctx context.Context) (done bool, state string, err error)) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		done, state, err := cond(ctx)
		last = state
		return done, err
	})
	if err == nil {
		return nil
	}
	if wait.Interrupted(err) {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("waiting for %s: %w (last seen: %s)", what, ctx.Err(), orNothing(last))
		}
		return fmt.Errorf("waiting for %s: %w after %s (last seen: %s)", what, ErrTimeout, timeout, orNothing(last))
	}
	return fmt.Errorf("waiting for %s: %w", what, err)
}

func orNothing(s string) string {
	if strings.TrimSpace(s) == "" {
		return "nothing yet"
	}
	return s
}
