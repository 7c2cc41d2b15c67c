package v1

// EventSink receives events. Everything that produces events takes one, never
// a concrete writer, so producers work without a run file (tests, logs).
// Implementations must be safe for concurrent use.
type EventSink interface {
	Event(Event) error
}

// EventFunc adapts a function to EventSink.
type EventFunc func(Event) error

// Event calls f(e).
func (f EventFunc) Event(e Event) error { return f(e) }

// Discard is an EventSink that drops every event.
var Discard EventSink = EventFunc(func(Event) error { return nil })
