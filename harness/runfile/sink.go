package runfile

import zdv1 "zerodrop.dev/zerodrop/apis/v1"

// EventSink receives events. Everything that produces events takes one, never
// a concrete writer, so producers work without a run file (tests, logs).
// Implementations must be safe for concurrent use.
type EventSink interface {
	Event(zdv1.Event) error
}

// EventFunc adapts a function to EventSink.
type EventFunc func(zdv1.Event) error

// Event calls f(e).
func (f EventFunc) Event(e zdv1.Event) error { return f(e) }

// Discard is an EventSink that drops every event.
var Discard EventSink = EventFunc(func(zdv1.Event) error { return nil })
