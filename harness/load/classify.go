package load

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// errRequestTimeout is the cancel cause of a request's own deadline, so a
// timeout is told apart from any other cancellation by identity, not text.
var errRequestTimeout = errors.New("zerodrop: per-request timeout exceeded")

// classifyAttempt classifies err from a request whose context is ctx: if the
// request's own deadline fired, whatever error the transport surfaced is a
// timeout.
func classifyAttempt(ctx context.Context, err error) string {
	if err == nil {
		return ""
	}
	if cause := context.Cause(ctx); cause != nil && errors.Is(cause, errRequestTimeout) {
		return zdv1.ClassTimeout
	}
	return Classify(err)
}

// Classify maps a request error to a run-file error class by walking the
// error chain (errors.Is/As on syscall and net errors).
func Classify(err error) string {
	if err == nil {
		return ""
	}
	var dnsErr *net.DNSError
	var netErr net.Error
	var refused *goAwayRefused
	switch {
	case errors.Is(err, errRequestTimeout):
		return zdv1.ClassTimeout
	case errors.As(err, &refused):
		return zdv1.ClassGoAwayRefused
	case errors.As(err, &dnsErr):
		return zdv1.ClassDNS
	case errors.Is(err, syscall.ECONNREFUSED):
		return zdv1.ClassRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED):
		return zdv1.ClassReset
	// The peer closed the connection before a complete response: for a
	// client that is the same failure as a reset.
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return zdv1.ClassReset
	case errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return zdv1.ClassTimeout
	case errors.As(err, &netErr) && netErr.Timeout():
		return zdv1.ClassTimeout
	// net/http returns an unexported, unwrapped error when the server
	// closes a connection the client was about to reuse and the retry is
	// not possible; its text is the only handle on it.
	case strings.Contains(err.Error(), "server closed idle connection"):
		return zdv1.ClassReset
	default:
		return zdv1.ClassOther
	}
}
