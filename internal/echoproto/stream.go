package echoproto

import (
	"fmt"
	"strconv"
	"time"
)

// A stream's bounds, a gRPC stream's or a WebSocket session's: nothing a
// client asks makes the server hold a stream longer than MaxMessages x
// MaxInterval, or send more than MaxMessages.
const (
	DefaultMessages = 10
	DefaultInterval = 100 * time.Millisecond
	MaxMessages     = 1000
	MaxInterval     = 10 * time.Second
)

// ParseStream reads a stream's length, messages and interval as a client
// wrote them ("" for the default), with the bounds above; mKey and iKey
// name them in the error.
func ParseStream(mKey, messages, iKey, interval string) (n int, every time.Duration, err error) {
	n, every = DefaultMessages, DefaultInterval
	if messages != "" {
		n, err = strconv.Atoi(messages)
		if err != nil || n < 1 || n > MaxMessages {
			return 0, 0, fmt.Errorf("%s %q: want 1 to %d messages", mKey, messages, MaxMessages)
		}
	}
	if interval != "" {
		every, err = time.ParseDuration(interval)
		if err != nil || every < 0 || every > MaxInterval {
			return 0, 0, fmt.Errorf("%s %q: want a Go duration from 0 to %s, e.g. 100ms", iKey, interval, MaxInterval)
		}
	}
	return n, every, nil
}
