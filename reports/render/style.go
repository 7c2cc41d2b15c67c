package render

import (
	"strings"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// Every colour the plots use is written here, once: the plots, their
// legends and the tests read these tables.
//
// Failures are filled bars, events are vertical lines: two channels, so an
// event colour may come close to a failure colour without confusion, but
// within each channel every entry has a colour of its own (the tests check
// the CIE76 distance between every pair). Nothing that is not a failure is
// drawn red: pods in the share plot and event markers keep clear of the
// failure reds.
const (
	colorOK     = "#3a9a4a"
	colorWindow = "#d62728"
	// colorRequested draws the requested rate; colorStall the spans the
	// load generator did not keep its schedule.
	colorRequested = "#1f2937"
	colorStall     = "#7f7f7f"
	colorGrid      = "#e3e3e3"
	colorAxis      = "#555"
	colorOther     = "#c7c7c7"
	// colorHalo is drawn under every marker line and label so it reads
	// over bars of any colour.
	colorHalo = "#ffffff"
)

// classColors are the failure kinds' fills. The statuses a load balancer
// or proxy answers with when a backend is gone (502, 503, 504) and the
// server error 500 each have their own; other statuses share one per
// class (5xx, 4xx, the rest).
var classColors = map[string]string{
	zdv1.ClassRefused: "#d62728", // red
	zdv1.ClassReset:   "#ff7f0e", // orange
	zdv1.ClassTimeout: "#6a3d9a", // purple
	zdv1.ClassDNS:     "#8c564b", // brown
	zdv1.ClassOther:   "#404040", // near black
	zdv1.ClassRetried: "#e6ab02", // gold
	"http-500":        "#e7298a", // magenta
	"http-502":        "#17becf", // cyan
	"http-503":        "#1f5fbf", // blue
	"http-504":        "#8c8c00", // olive
}

const (
	colorHTTP5xx   = "#c49bd6" // lilac: a 5xx without its own colour
	colorHTTP4xx   = "#f2c894" // sand
	colorHTTPOther = "#9e9e9e" // grey
)

func classColor(c string) string {
	if col, ok := classColors[c]; ok {
		return col
	}
	switch {
	case strings.HasPrefix(c, "http-5"):
		return colorHTTP5xx
	case strings.HasPrefix(c, "http-4"):
		return colorHTTP4xx
	}
	return colorHTTPOther
}

// eventColors give every event type of apis/v1 a marker colour of its own.
// Related types share a hue family (node operations orange-brown, pods
// violet and black, endpoints blue, nodes and pools teal, rollouts purple,
// the LB green, the load grey) so a plot reads at a glance, but never a
// colour. pod-deleted is black: over the red of failed requests it stays
// the most visible thing in the plot.
var eventColors = map[string]string{
	zdv1.EventCordon:              "#e66101",
	zdv1.EventUncordon:            "#f4a93c",
	zdv1.EventDrainStart:          "#a6500a",
	zdv1.EventDrainEnd:            "#d9a066",
	zdv1.EventPodTerminating:      "#b3007a",
	zdv1.EventPodDeleted:          "#000000",
	zdv1.EventPodReady:            "#1b7837",
	zdv1.EventPodUnready:          "#9970ab",
	zdv1.EventEndpointRemoved:     "#2166ac",
	zdv1.EventEndpointAdded:       "#74add1",
	zdv1.EventEndpointTerminating: "#0b2f6b",
	zdv1.EventNodeAdded:           "#35978f",
	zdv1.EventNodeRemoved:         "#00524a",
	zdv1.EventNodeShutdown:        "#7fbc41",
	zdv1.EventNodeOff:             "#003c30",
	zdv1.EventNodeTainted:         "#bf812d",
	zdv1.EventNodeLabelled:        "#8c510a",
	zdv1.EventInterruptionNotice:  "#ff7f50",
	zdv1.EventPoolAdded:           "#80cdc1",
	zdv1.EventPoolRemoved:         "#5e8c86",
	zdv1.EventRolloutStart:        "#5e2a84",
	zdv1.EventRolloutEnd:          "#b895d4",
	zdv1.EventLBBackendAdded:      "#9acd32",
	zdv1.EventLBBackendRemoved:    "#4d7a00",
	zdv1.EventLBNodeHealthy:       "#c2b280",
	zdv1.EventLBNodeUnhealthy:     "#6b5a1e",
	zdv1.EventLBTargetHealthy:     "#f2b6c6",
	zdv1.EventLBTargetUnhealthy:   "#8c2d19",
	zdv1.EventRouteChanged:        "#41ab5d",
	zdv1.EventAnnouncerChanged:    "#00ced1",
	zdv1.EventLoadStart:           "#8a8a8a",
	zdv1.EventLoadStop:            "#5a5a5a",
	zdv1.EventUnsent:              "#b0b0b0",
	zdv1.EventInstrumentPause:     "#e07b00",
	zdv1.EventDisruption:          "#3f007d",
	zdv1.EventAction:              "#ff1493",
	zdv1.EventNote:                "#d4a017",
}

// spareEventColors go, in this order, to event types without a colour of
// their own (a user's "sigstop"), skipping any colour already used in the
// plot, so those types too are told apart.
var spareEventColors = []string{
	"#00a0b0", "#ff6f00", "#3949ab", "#7cb342", "#8e24aa", "#00796b", "#c0ca33", "#6d4c41",
	"#f06292", "#0097a7", "#5d4037", "#9575cd",
}

// colorOtherEvents is for types beyond the spare colours.
const colorOtherEvents = "#bdbdbd"

// drawnEvent reports whether an event type gets a marker: every type but
// the criteria a harness records, which says what is judged, not anything
// that happened to the system under test.
func drawnEvent(eventType string) bool { return eventType != zdv1.EventCriteria }

// eventPalette assigns a colour to each of types (in the order given): its
// own from eventColors, else the next spare one not already in use.
func eventPalette(types []string) map[string]string {
	out := make(map[string]string, len(types))
	used := map[string]bool{}
	for _, t := range types {
		if c, ok := eventColors[t]; ok {
			out[t] = c
			used[c] = true
		}
	}
	spare := 0
	for _, t := range types {
		if _, ok := out[t]; ok {
			continue
		}
		for spare < len(spareEventColors) && used[spareEventColors[spare]] {
			spare++
		}
		if spare == len(spareEventColors) {
			out[t] = colorOtherEvents
			continue
		}
		out[t] = spareEventColors[spare]
		used[out[t]] = true
		spare++
	}
	return out
}

// podPalette colours the pods of the share plot: blues, greens, yellows,
// browns and greys, no red or pink, which would read as failure.
var podPalette = []string{
	"#4e79a7", "#59a14f", "#edc948", "#76b7b2", "#9c755f", "#b07aa1",
	"#6b6ecf", "#8cd17d", "#bab0ac", "#2f4b7c", "#a0cbe8",
}

func podColor(i int, pod string) string {
	if pod == OtherPods {
		return colorOther
	}
	return podPalette[i%len(podPalette)]
}

// Colours of the pod-state plot's series: served while unready in the
// pod-unready marker's colour, while draining in drain-start's.
var (
	colorServedUnready  = eventColors[zdv1.EventPodUnready]
	colorServedDraining = eventColors[zdv1.EventDrainStart]
)

const colorNewConnections = "#2b8cbe"

// Colours of the latency plot's lines.
const (
	colorP50 = "#2b8cbe"
	colorP99 = "#e6550d"
	colorMax = "#636363"
)
