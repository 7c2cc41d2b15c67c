package runfile

import (
	"strconv"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/internal/jsonstr"
)

// appendResultLine encodes a result line without reflection: one per
// request, so it is on the load generator's hot path. The output decodes
// to the same values as encoding/json's (see TestAppendResultLine).
func appendResultLine(b []byte, r *zdv1.Result) []byte {
	b = append(b, `{"kind":"result","seq":`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	b = append(b, `,"id":`...)
	b = jsonstr.Append(b, r.ID)
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
	b = appendOptString(b, `,"forwarded_for":`, r.ForwardedFor)
	b = appendOptBool(b, `,"ready":`, r.Ready)
	b = appendOptBool(b, `,"draining":`, r.Draining)
	b = appendOptString(b, `,"conn_id":`, r.ConnID)
	if r.ConnRequest != 0 {
		b = append(b, `,"conn_request":`...)
		b = strconv.AppendInt(b, int64(r.ConnRequest), 10)
	}
	if r.Lag != 0 {
		b = append(b, `,"lag_ns":`...)
		b = strconv.AppendInt(b, int64(r.Lag), 10)
	}
	if r.Retries != 0 {
		b = append(b, `,"retries":`...)
		b = strconv.AppendInt(b, int64(r.Retries), 10)
	}
	b = appendOptString(b, `,"retry_error":`, r.RetryError)
	b = appendOptString(b, `,"grpc_code":`, r.GRPCCode)
	b = appendOptInt(b, `,"messages":`, r.Messages)
	b = appendOptInt(b, `,"want_messages":`, r.WantMessages)
	b = appendOptInt(b, `,"reconnects":`, r.Reconnects)
	return append(b, '}')
}

func appendOptString(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	return jsonstr.Append(append(b, key...), v)
}

func appendOptInt(b []byte, key string, v int) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), int64(v), 10)
}

func appendOptBool(b []byte, key string, v *bool) []byte {
	if v == nil {
		return b
	}
	return strconv.AppendBool(append(b, key...), *v)
}
