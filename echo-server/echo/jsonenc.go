package echo

// The echo answer is built by appending into a pooled buffer: encoding/json
// on a struct costs reflection and an allocation per field on the hot path,
// and the answer's shape never changes.

// appendJSONBool appends true or false.
func appendJSONBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}
