// Package v1 is zerodrop's versioned API: the two files a run leaves behind
// and everything that decides a verdict from them. It sits at the bottom of
// the project and imports nothing from it, so the harness, the renderers and
// outside tools all read the same types (Gateway API keeps its conformance
// report the same way, in conformance/apis/v1).
//
//   - The run file ("zerodrop.dev/runfile/v1"): one JSON-lines file per run
//     holding everything the harness measured (load results) and did or saw
//     (events), on one wall clock. Header, Result, Event and End are its
//     lines; package zerodrop.dev/zerodrop/harness/runfile writes and reads them.
//   - report.json ("zerodrop.dev/report/v1"): what a whole run measured and
//     concluded, per scenario, with the evidence behind each verdict (Report),
//     computed from run files by package zerodrop.dev/zerodrop/harness/verdict. Its JSON
//     Schema is report.v1.json in this directory (ReportSchemaV1); the fields
//     are described in reports/README.md.
//
// Any change to a field's meaning needs a new version (a v2 package beside
// this one); new optional fields and new line kinds do not.
//
// # Line format (schema "zerodrop.dev/runfile/v1")
//
// Every line is one JSON object terminated by '\n'. Its "kind" key, always
// written first, says what the line is:
//
//	{"kind":"meta","schema":"zerodrop.dev/runfile/v1","run_id":"…","created":"…","tool_version":"…","scenario":{…},"load":{…}}
//	{"kind":"result","seq":0,"id":"3f9c…-0","time":"…","latency_ns":912345,"status":200,"pod":"echo-1",…}
//	{"kind":"event","time":"…","source":"harness","type":"cordon","object":"node/kind-worker"}
//	{"kind":"end","time":"…","results":30000,"events":12}
//
// The kinds:
//
//   - meta: the first line, exactly once. "scenario" is a
//     ScenarioSpec (name, role, seeds, labels, config, criteria) and
//     "load" a LoadSettings, so a run can be re-analysed from the file
//     alone.
//   - result: one per request, in completion order (not send order). Fields:
//     seq (load-local sequence, 0-based), id (the X-Request-Id sent), target
//     (index into load.targets, omitted when 0), time (send time, RFC 3339
//     with nanoseconds), latency_ns, status (HTTP status, 0 when there was no
//     response), class (error class when status is 0: refused, reset,
//     timeout, dns, other), error (the error text), reused (the client reused
//     a kept-alive connection), lag_ns (how late after its scheduled time
//     it was sent), retries and retry_error (attempts the HTTP client made
//     on its own after a failed one, and that failure: such a request
//     counts as dropped, class "retried"), and from the echo server's JSON
//     body: pod, node, client_ip, x_forwarded_for (as forwarded_for), ready,
//     draining, conn_id, conn_request. A gRPC call (load.protocol "grpc"
//     or "grpc-stream") adds grpc_code (its status code's name; status is
//     200 for OK and 0 otherwise), and a stream messages and want_messages
//     (got and asked for: a stream short of them is dropped).
//     Empty fields are omitted; ready and draining are omitted when the
//     body did not say.
//   - event: an Event (see the type) from the harness, Kubernetes, the LB or
//     the load generator.
//   - end: the last line, written by Close: end time, the number of result
//     and event lines written, and "error" when the run broke. A file without
//     an end line was cut short (the process was killed); everything before
//     the cut is still valid.
//
// Readers skip lines of a kind they do not know, so new kinds can be added
// without a schema bump; changing a field's meaning needs one.
//
// # Redaction
//
// Neither file may carry a credential: the run-file writer redacts event
// texts and Report.WriteFile redacts the report (RedactString, RedactValue,
// Report.Redact); renderers scrub every finished document (ScrubText).
package v1
