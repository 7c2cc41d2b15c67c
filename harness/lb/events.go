package lb

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// SubscribeEvents follows the LB's event stream at baseURL (e.g.
// "http://172.18.0.5:9100") and hands every event to sink, reconnecting with
// ?since= after a broken stream, until ctx ends. It returns ctx's error, or
// the sink's error when the sink refuses an event.
func SubscribeEvents(ctx context.Context, baseURL string, sink zdv1.EventSink, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var since time.Time
	backoff := 200 * time.Millisecond
	for {
		err := streamOnce(ctx, baseURL, since, func(e zdv1.Event) error {
			since = e.Time
			return sink.Event(e)
		})
		var se sinkError
		if errors.As(err, &se) {
			return se.err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		log.Warn("LB event stream broke; reconnecting", "url", baseURL, "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

type sinkError struct{ err error }

func (s sinkError) Error() string { return "event sink: " + s.err.Error() }

func streamOnce(ctx context.Context, baseURL string, since time.Time, f func(zdv1.Event) error) error {
	u := baseURL + "/events"
	if !since.IsZero() {
		u += "?since=" + url.QueryEscape(since.Format(time.RFC3339Nano))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("LB events %s: %w", u, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("LB events %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("LB events %s: HTTP %d: %s", u, resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e zdv1.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("LB events %s: bad line %q: %w", u, sc.Bytes(), err)
		}
		if err := f(e); err != nil {
			return sinkError{err}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("LB events %s: %w", u, err)
	}
	return io.ErrUnexpectedEOF
}
