package waitfor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	fatal := errors.New("gone for good")
	tests := []struct {
		name    string
		ctx     func() (context.Context, context.CancelFunc)
		cond    Cond
		wantErr []string // substrings; nil = success
		is      error
	}{
		{"done at once", ctxBackground, func(context.Context) (bool, string, error) { return true, "", nil }, nil, nil},
		{"never done: timeout names the wait and the last state", ctxBackground,
			func(context.Context) (bool, string, error) { return false, "2/3 ready", nil },
			[]string{"waiting for the thing", "after 50ms", "last seen: 2/3 ready"}, ErrTimeout},
		{"a check cut short by the deadline keeps the state before it", ctxBackground,
			cutShort(),
			[]string{"last seen: no space left on device"}, ErrTimeout},
		{"no state seen", ctxBackground, func(context.Context) (bool, string, error) { return false, "", nil },
			[]string{"last seen: nothing yet"}, ErrTimeout},
		{"a fatal error ends the wait", ctxBackground, func(context.Context) (bool, string, error) { return false, "", fatal },
			[]string{"waiting for the thing", "gone for good"}, fatal},
		{"cancelled is not a timeout", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, func(context.Context) (bool, string, error) { return false, "x", nil }, []string{"context canceled", "last seen: x"}, context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			defer cancel()
			err := Until(ctx, "the thing", 50*time.Millisecond, 10*time.Millisecond, tc.cond)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q is not %v", err, tc.is)
			}
			if tc.is != ErrTimeout && errors.Is(err, ErrTimeout) {
				t.Errorf("error %q claims a timeout", err)
			}
		})
	}
}

func ctxBackground() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

func TestRetryReportsTheLastError(t *testing.T) {
	n := 0
	err := Retry(context.Background(), "the pool", 40*time.Millisecond, 5*time.Millisecond, func(context.Context) error {
		n++
		return errors.New("webhook not ready")
	})
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "webhook not ready") || n < 2 {
		t.Errorf("err %v after %d tries", err, n)
	}
	calls := 0
	if err := Retry(context.Background(), "x", time.Second, time.Millisecond, func(context.Context) error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	}); err != nil || calls != 3 {
		t.Errorf("err %v after %d calls, want success on the 3rd", err, calls)
	}
}

// cutShort is a check that sees something once, then blocks until the
// deadline and returns what a client cut short says.
func cutShort() Cond {
	calls := 0
	return func(ctx context.Context) (bool, string, error) {
		calls++
		if calls == 1 {
			return false, "no space left on device", nil
		}
		<-ctx.Done()
		return false, "client rate limiter Wait returned an error", nil
	}
}
