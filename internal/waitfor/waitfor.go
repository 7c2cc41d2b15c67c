// Package waitfor is zerodrop's one poller: every wait in the harness (a
// rollout, a node, an API server, an address pool) goes through it, so every
// wait has a timeout and every timeout says what it waited for and where
// things stood.
package waitfor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// ErrTimeout is wrapped by every wait that ran out of time.
var ErrTimeout = errors.New("timed out")

// Cond reports whether the wait is over and, either way, the state it saw
// (for the error when time runs out). A non-nil error ends the wait at once:
// something that will not get better by waiting.
type Cond func(ctx context.Context) (done bool, state string, err error)

// Until checks cond at once and then every interval until it is done,
// returns an error, ctx ends or timeout passes. what names the awaited state
// in the error ("deployment ns/web to finish its rollout").
func Until(ctx context.Context, what string, timeout, interval time.Duration, cond Cond) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		done, state, err := cond(ctx)
		// A check the deadline cut short saw nothing of the thing waited
		// for ("client rate limiter Wait returned an error"): the state
		// before it is what the timeout reports.
		if ctx.Err() == nil || last == "" {
			last = state
		}
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

// Retry is Until for a check whose error means "not yet": it is retried,
// and the last one is the state the timeout error reports.
func Retry(ctx context.Context, what string, timeout, interval time.Duration, f func(context.Context) error) error {
	return Until(ctx, what, timeout, interval, func(ctx context.Context) (bool, string, error) {
		if err := f(ctx); err != nil {
			return false, err.Error(), nil
		}
		return true, "", nil
	})
}

func orNothing(s string) string {
	if strings.TrimSpace(s) == "" {
		return "nothing yet"
	}
	return s
}

// Sleep waits d, or until ctx is done (its error then).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
