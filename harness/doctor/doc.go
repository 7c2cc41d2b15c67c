// Package doctor predicts dropped requests from Kubernetes manifests before
// anything runs. The incidents zerodrop reproduces (docs/incidents.md) follow
// from configuration that can be read statically; the doctor reads it and
// reports, for each Service of type LoadBalancer (and each Service an Ingress
// or Gateway API route sends to) and the workloads behind it, the risk, the
// fix and the incident it comes from.
//
// Inputs: Read / ReadFile / Load parse files, directories, stdin, multi-document
// YAML or JSON and List kinds, keeping each object's YAML tree so findings
// carry the file and line of the field at fault; LoadCluster reads the same
// kinds from a live cluster. Check runs the rules; WriteText, WriteJSON and
// WriteSARIF (2.1.0) render the Report. The `zerodrop doctor` subcommand
// (cmd/zerodrop/cmd_doctor.go) is a thin layer over this package.
//
// # Rules
//
// Rules are data (Rules(): ID, name, severity, incidents, description, fix):
//
//	ZD001 serving-ends-before-lb-moves   error   rolling-update-local                     Local: signal + period*(failureThreshold-1) < LB lag, app still accepting
//	ZD002 prestop-shorter-than-lb-lag    error   rolling-update-local,source-ip-dilemma   Local: accepting after termination starts < LB lag (< 1.26: always)
//	ZD003 grace-not-above-prestop        error   rolling-update-local                     terminationGracePeriodSeconds <= preStop
//	ZD004 no-prestop                     warning source-ip-dilemma                        Cluster: no preStop hook at all
//	ZD005 prestop-duration-unknown       warning rolling-update-local                     exec/httpGet hook without a readable duration (info with Cluster)
//	ZD006 zero-grace-period              error   rolling-update-local                     terminationGracePeriodSeconds: 0
//	ZD010 local-without-spread           warning nodepool-backend                         Local, >= 2 replicas, no spread or anti-affinity
//	ZD011 pool-affinity-vs-lb-backend    error*  nodepool-backend                         Local: Pods' pool vs the LB's backend pool
//	ZD012 single-replica                 warning drain-local-pdb,source-ip-dilemma        one replica
//	ZD013 spread-counts-tainted-nodes    warning rolling-update-local,drain-local-pdb     DoNotSchedule spread without nodeTaintsPolicy Honor counts tainted, cordoned nodes
//	ZD020 pdb-never-allows-eviction      error   drain-local-pdb                          maxUnavailable 0 / minAvailable = replicas
//	ZD021 pdb-overlap                    error   drain-local-pdb                          more than one PDB selects the Pods
//	ZD022 pdb-blocks-unhealthy-eviction  warning drain-local-pdb                          no unhealthyPodEvictionPolicy AlwaysAllow
//	ZD023 no-pdb                         info    drain-local-pdb                          no PDB covers >= 2 replicas
//	ZD024 pool-drain-outpaces-lb         error*  drain-local-pdb                          Local, no PDB limit: new Pods ready + addition lag > removal lag
//	ZD030 no-readiness-probe             error   rolling-update-local,keepalive-unready   serving container without readiness probe
//	ZD031 readiness-equals-liveness      warning rolling-update-local,keepalive-unready   both probes hit the same handler
//	ZD032 rollout-allows-zero-ready      error*  rolling-update-local                     Recreate, or maxUnavailable reaching all replicas
//	ZD033 local-without-min-ready        warning rolling-update-local                     Local with minReadySeconds 0
//	ZD040 keepalive-behind-l7            warning keepalive-unready                        L7 LB + keep-alive + readiness that can flip
//	ZD041 keepalive-reaches-unready      info    keepalive-unready                        L4 LB + keep-alive + readiness that can flip
//	ZD090 service-selects-nothing        info                                             the Service selects no workload in the input
//	ZD092 container-injected             info                                             image: auto with Istio injection: container rules skipped
//	ZD091 lb-annotation-invalid          warning                                          unknown lb profile or non-numeric health-check annotation
//
// (* lower severity in some cases: ZD011 a
// warning or info when only the Pods are pinned, ZD032 a warning for a
// DaemonSet without surge, ZD024 a warning when only a slow readiness probe
// would open the gap.)
//
// # Kubernetes versions
//
// Rules whose truth depends on the release follow WithKubernetesMinor (the
// cluster's version, or --kubernetes-version); without it they judge for the
// supported releases (1.28 and later). Today that is kube-proxy's use of
// terminating endpoints (KEP-1669, on by default from 1.26): before it, a
// node whose last endpoint terminates drops the LB's new connections for the
// whole health-check lag whatever the preStop hook, so ZD002 fires on every
// Local Service and ZD001, which is about the serving window, does not. And
// the scheduler's use of nodeTaintsPolicy (on by default from 1.26): before
// it a DoNotSchedule spread counts tainted and cordoned nodes whatever it
// says, and the fixes for ZD010 and ZD013 write ScheduleAnyway; from it a
// spread counts them unless it says nodeTaintsPolicy: Honor (ZD013, whose
// fix says it).
//
// # LB profiles: the health-check lag
//
// With externalTrafficPolicy Local a cloud LB picks nodes by health-checking
// kube-proxy's healthCheckNodePort and stops sending new connections to a node
// only interval x unhealthyThreshold after the check starts failing. The lag
// is per provider. The doctor reads it from the LB profiles of
// clusters/lb/profiles (one YAML file per vendor behaviour, every number with
// its source), the same files the fixtures and the cloud LB read;
// `zerodrop doctor --list-profiles` prints them.
//
// A Service picks its profile with the annotation zerodrop.dev/lb-profile (the
// same annotation the cloud-style LB reads); otherwise --lb-profile applies;
// without that flag the provider annotations and loadBalancerClass the cloud
// controllers read name the LB (lbHints: aws-load-balancer-type nlb is
// aws-nlb, other AWS annotations the in-tree Classic ELB, Azure annotations
// azure-lb, Alibaba Cloud's alibaba-cloud-loadbalancer- (or alicloud-)
// annotations alibaba-slb, cloud.google.com/l4-rbs gke-l4, other GKE
// annotations gke-l4 or gcp-nlb). A Service that names no LB at all is judged against every
// plausible cloud LB (gke-l4, gcp-nlb, aws-nlb, aws-elb, azure-lb): each
// finding says on which it holds, and the exit code follows the worst, so
// naming the LB is how a user gets the verdict for theirs. The providers' own health-check
// annotations (aws-load-balancer-healthcheck-interval / -unhealthy-threshold /
// -healthy-threshold, azure-load-balancer-health-probe-interval /
// -num-of-probe; on alibaba-slb the listener's health-check-interval,
// healthy-/unhealthy-threshold, the timeout of its health-check-type and
// health-check-connect-port) override the profile's numbers for that
// Service.
package doctor
