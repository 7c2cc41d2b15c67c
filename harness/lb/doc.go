// Package lb is the test tool's client of zerodrop's cloud-style load
// balancer (LB=cloud): start, find and remove its container on a kind
// network (StartKind, FindKind, RemoveKind), read what it does per Service
// (FetchState), wait until it has settled for a Service (WaitSettled) and
// follow its events into a run file (SubscribeEvents). The types of its
// admin API (ServiceState and what it holds) are package
// zerodrop.dev/zerodrop/apis/cloudlb/v1.
//
// The LB itself (controller, health checks, nftables data plane, L7 proxy)
// is package zerodrop.dev/zerodrop/internal/cloudlb, run by cmd/zerodrop-lb inside the
// container; the test tool never links it. Its profiles are package
// zerodrop.dev/zerodrop/clusters/lb/profiles.
package lb
