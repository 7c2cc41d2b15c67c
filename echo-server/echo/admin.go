package echo

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Reply is the traffic port's JSON answer, for consumers (the load
// generator) to decode. The server encodes it by hand for speed; a test
// keeps the two in step.
type Reply struct {
	Pod           string `json:"pod"`
	Node          string `json:"node"`
	Namespace     string `json:"namespace"`
	PodIP         string `json:"pod_ip"`
	ClientIP      string `json:"client_ip"`
	ClientPort    int    `json:"client_port"`
	XForwardedFor string `json:"x_forwarded_for"`
	Ready         bool   `json:"ready"`
	Draining      bool   `json:"draining"`
	Terminating   bool   `json:"terminating"`
	KeepAlive     bool   `json:"keepalive"`
	Proto         string `json:"proto"`
	ConnID        string `json:"conn_id"`
	ConnRequest   uint64 `json:"conn_request"`
	Seq           uint64 `json:"seq"`
	Time          string `json:"time"`
	RequestID     string `json:"request_id"`
}

// State is the switches as the admin port reports them after a change.
type State struct {
	// Ready is what /readyz answers (switch on and not draining).
	Ready       bool `json:"ready"`
	KeepAlive   bool `json:"keepalive"`
	Draining    bool `json:"draining"`
	Terminating bool `json:"terminating"`
	// Changed is whether this call changed the switch it addressed.
	Changed bool `json:"changed"`
}

// Stats is GET /admin/stats. The served_* counters count echo answers
// only, not probes; served_while_unready includes the draining ones.
type Stats struct {
	Pod                    string `json:"pod"`
	ServedTotal            uint64 `json:"served_total"`
	ServedWhileUnready     uint64 `json:"served_while_unready"`
	ServedWhileDraining    uint64 `json:"served_while_draining"`
	ServedWhileTerminating uint64 `json:"served_while_terminating"`
	OpenConnections        int64  `json:"open_connections"`
	ConnectionsTotal       uint64 `json:"connections_total"`
	Ready                  bool   `json:"ready"`
	KeepAlive              bool   `json:"keepalive"`
	Draining               bool   `json:"draining"`
	Terminating            bool   `json:"terminating"`
}

func (s *server) stats() Stats {
	return Stats{
		Pod:                    s.cfg.Identity.Pod,
		ServedTotal:            s.served.Load(),
		ServedWhileUnready:     s.servedUnready.Load(),
		ServedWhileDraining:    s.servedDraining.Load(),
		ServedWhileTerminating: s.servedTerminating.Load(),
		OpenConnections:        s.openConns.Load(),
		ConnectionsTotal:       s.connsTotal.Load(),
		Ready:                  s.ready(),
		KeepAlive:              s.keepAlive.Load(),
		Draining:               s.draining.Load(),
		Terminating:            s.terminating.Load(),
	}
}

func (s *server) state(changed bool) State {
	return State{
		Ready:       s.ready(),
		KeepAlive:   s.keepAlive.Load(),
		Draining:    s.draining.Load(),
		Terminating: s.terminating.Load(),
		Changed:     changed,
	}
}

// setReady flips the readiness switch and logs only a real change.
func (s *server) setReady(v bool, reason string) bool {
	if s.readySwitch.Swap(v) == v {
		return false
	}
	s.log.Info("readiness switched", "ready_switch", v, "ready", s.ready(), "reason", reason)
	return true
}

func (s *server) setKeepAlive(v bool, reason string) bool {
	if s.keepAlive.Swap(v) == v {
		return false
	}
	s.log.Info("keep-alive switched", "keepalive", v, "reason", reason)
	return true
}

// adminHandler is the admin port. Method patterns give 405 with Allow on
// a wrong method.
func (s *server) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /admin/ready", s.switchHandler("ready", s.setReady))
	mux.HandleFunc("POST /admin/keepalive", s.switchHandler("keepalive", s.setKeepAlive))
	mux.HandleFunc("GET /admin/stats", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.stats())
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
	}))
	return mux
}

func (s *server) switchHandler(name string, set func(v bool, reason string) bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if !q.Has("value") {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("missing value: POST /admin/%s?value=true or ?value=false", name))
			return
		}
		v, err := parseSwitch(q.Get("value"))
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("POST /admin/%s: %v", name, err))
			return
		}
		changed := set(v, "admin")
		writeJSON(w, http.StatusOK, s.state(changed))
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // only plain structs pass through here
		http.Error(w, "encoding the answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, struct {
		Error string `json:"error"`
	}{msg})
}

// newRegistry is a registry of this server's own: metrics read the same
// atomics as /admin/stats, so the two can never disagree and the hot path
// pays nothing for Prometheus.
func (s *server) newRegistry() (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	counter := func(name, help string, f func() uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: "zerodrop", Subsystem: "echo", Name: name, Help: help,
		}, func() float64 { return float64(f()) })
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "zerodrop", Subsystem: "echo", Name: name, Help: help,
		}, f)
	}
	b2f := func(f func() bool) func() float64 {
		return func() float64 {
			if f() {
				return 1
			}
			return 0
		}
	}
	cs := []prometheus.Collector{
		counter("served_total", "Echo answers on the traffic port (probes excluded).", s.served.Load),
		counter("served_while_unready_total", "Echo answers given while /readyz would have failed.", s.servedUnready.Load),
		counter("served_while_draining_total", "Echo answers given after the server stopped accepting.", s.servedDraining.Load),
		counter("served_while_terminating_total", "Echo answers given after the termination signal.", s.servedTerminating.Load),
		counter("connections_total", "TCP connections accepted on the traffic port.", s.connsTotal.Load),
		gauge("open_connections", "TCP connections open on the traffic port.", func() float64 { return float64(s.openConns.Load()) }),
		gauge("ready", "1 when /readyz answers 200.", b2f(s.ready)),
		gauge("keepalive", "1 when keep-alive is on.", b2f(s.keepAlive.Load)),
		gauge("draining", "1 once the server stopped accepting.", b2f(s.draining.Load)),
		gauge("terminating", "1 once a termination signal arrived.", b2f(s.terminating.Load)),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering echo metrics: %w", err)
		}
	}
	return reg, nil
}
