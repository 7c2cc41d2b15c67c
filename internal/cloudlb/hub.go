package cloudlb

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// EventHub is the LB's zdv1.EventSink: it logs every event, keeps the
// latest ones for late subscribers and streams them to HTTP subscribers as
// JSON lines (GET /events).
type EventHub struct {
	log  *slog.Logger
	keep int

	mu   sync.Mutex
	ring []zdv1.Event
	subs map[chan zdv1.Event]struct{}
}

// NewEventHub keeps the last keep events for replay.
func NewEventHub(log *slog.Logger, keep int) *EventHub {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &EventHub{log: log, keep: keep, subs: map[chan zdv1.Event]struct{}{}}
}

// Event implements zdv1.EventSink. A subscriber too slow to take an event
// is cut off (its stream ends) rather than slowing the LB down; it reconnects
// with ?since= and replays what it missed.
func (h *EventHub) Event(e zdv1.Event) error {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	attrs := []any{"type", e.Type, "object", e.Object}
	for k, v := range e.Fields {
		attrs = append(attrs, k, v)
	}
	h.log.Info(e.Message, attrs...)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ring = append(h.ring, e)
	if len(h.ring) > h.keep {
		h.ring = h.ring[len(h.ring)-h.keep:]
	}
	for ch := range h.subs {
		select {
		case ch <- e:
		default:
			close(ch)
			delete(h.subs, ch)
		}
	}
	return nil
}

// subscribe returns the kept events after since and a channel of later ones.
func (h *EventHub) subscribe(since time.Time) ([]zdv1.Event, chan zdv1.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var past []zdv1.Event
	for _, e := range h.ring {
		if e.Time.After(since) {
			past = append(past, e)
		}
	}
	ch := make(chan zdv1.Event, 1024)
	h.subs[ch] = struct{}{}
	return past, ch
}

func (h *EventHub) unsubscribe(ch chan zdv1.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[ch]; ok {
		delete(h.subs, ch)
		close(ch)
	}
}

// ServeHTTP streams events as JSON lines: first the kept ones newer than
// ?since= (RFC 3339, default: all kept), then live ones until the client goes.
func (h *EventHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var since time.Time
	if s := r.URL.Query().Get("since"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			http.Error(w, fmt.Sprintf("since=%q is not an RFC 3339 time: %v", s, err), http.StatusBadRequest)
			return
		}
		since = t
	}
	past, ch := h.subscribe(since)
	defer h.unsubscribe(ch)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	write := func(e zdv1.Event) bool {
		if err := enc.Encode(e); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return true
	}
	for _, e := range past {
		if !write(e) {
			return
		}
	}
	if fl != nil {
		fl.Flush()
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case e, ok := <-ch:
			if !ok || !write(e) {
				return
			}
		}
	}
}
