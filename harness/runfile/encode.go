package runfile

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// appendResultLine encodes a result line without reflection: one per
// request, so it is on the load generator's hot path. The output decodes
// to the same values as encoding/json's (see TestAppendResultLine).
func appendResultLine(b []byte, r *Result) []byte {
	b = append(b, `{"kind":"result","seq":`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	b = append(b, `,"id":`...)
	b = appendString(b, r.ID)
	if r.Target != 0 {
		b = append(b, `,"target":`...)
		b = strconv.AppendInt(b, int64(r.Target), 10)
	}
	b = append(b, `,"time":"`...)
	b = r.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","latency_ns":`...)
	b = strconv.AppendInt(b, int64(r.Latency), 10)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(r.Status), 10)
	b = appendOptString(b, `,"class":`, r.Class)
	b = appendOptString(b, `,"error":`, r.Error)
	if r.Reused {
		b = append(b, `,"reused":true`...)
	}
	b = appendOptString(b, `,"pod":`, r.Pod)
	b = appendOptString(b, `,"node":`, r.Node)
	b = appendOptString(b, `,"client_ip":`, r.ClientIP)
	b = appendOptBool(b, `,"ready":`, r.Ready)
	b = appendOptBool(b, `,"draining":`, r.Draining)
	b = appendOptString(b, `,"conn_id":`, r.ConnID)
	if r.ConnRequest != 0 {
		b = append(b, `,"conn_request":`...)
		b = strconv.AppendInt(b, int64(r.ConnRequest), 10)
	}
	return append(b, '}')
}

func appendOptString(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	return appendString(append(b, key...), v)
}

func appendOptBool(b []byte, key string, v *bool) []byte {
	if v == nil {
		return b
	}
	return strconv.AppendBool(append(b, key...), *v)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD and
// U+2028/U+2029 are escaped, as encoding/json does.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
