package runfile

import zdv1 "zerodrop.dev/zerodrop/apis/v1"

// Line wrappers put "kind" first so the reader can dispatch on a prefix.
type (
	metaLine struct {
		Kind string `json:"kind"`
		*zdv1.Header
	}
	eventLine struct {
		Kind string `json:"kind"`
		*zdv1.Event
	}
	endLine struct {
		Kind string `json:"kind"`
		*zdv1.End
	}
)
