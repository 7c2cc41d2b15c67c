// Package echoproto is what the echo server speaks besides plain HTTP,
// written once for the server that answers (echo-server) and the load that
// asks (harness/load):
//
//   - its gRPC service (grpc.go): its name, its two methods, the metadata
//     that names a call and shapes a stream, and its protobuf description
//     for tools that need one (ghz). The service uses only protobuf's
//     well-known types, so neither side needs generated code: a call sends
//     google.protobuf.Empty and gets google.protobuf.BytesValue messages,
//     each holding the echo server's JSON answer (the one its HTTP routes
//     give: pod, node, connection, readiness, draining);
//   - its WebSocket route (websocket.go): the path, the query that shapes a
//     session, and the close a draining server sends;
//   - the bounds of a stream of answers, whichever of the two carries it
//     (stream.go).
package echoproto
