// Package standin turns a user's manifests into a faithful stand-in: the
// user's workload and Service of type LoadBalancer with every knob that
// decides dropped requests kept as written, and every container replaced by
// the zerodrop echo server, configured to end the way the user's server
// ends. Under load, the stand-in answers the question the user brings ("does
// my Deployment behind my LB drop requests when the pool is drained?") with
// requests the load generator can attribute to a pod, a node and a moment.
//
// What is kept (Knobs lists them, and Build reports each as kept or
// changed): replicas, the update strategy and minReadySeconds, the Pod's
// labels, terminationGracePeriodSeconds, affinity, topology spread,
// tolerations, nodeSelector, readiness gates, every container's ports,
// probes (timing and handler) and lifecycle hooks, the
// PodDisruptionBudgets, and the Service's type, traffic policies,
// annotations, ports, selector and session affinity.
//
// What is replaced, each with a Change that says why: images, commands,
// environment, volumes, resources and security contexts (the echo server
// needs none of them, and a scratch image has no shell for exec handlers);
// exec and gRPC probes become HTTP probes with the same timing on a path
// the echo server answers the same way; an exec preStop whose duration the
// doctor can read becomes the kubelet's sleep action of that duration; an
// HTTPS probe is sent as HTTP. What is left out: init containers, the
// HorizontalPodAutoscaler (no metrics in a test cluster: replicas are fixed
// at its minReplicas, the fewest Pods a disruption can meet), the
// Service's fixed addresses, source ranges and class (the test cluster's
// LB decides those).
//
// # How the stand-in ends
//
// The doctor's model of each container's shutdown (doctor.ContainerShutdown)
// sets the echo server's: for a server the doctor knows (the ingress-nginx
// controller, the echo server itself) what its source says it does; for any
// other, the doctor's assumption, which is also what most servers do when
// nothing handles SIGTERM (it stops accepting at once and keeps its
// readiness), unless Options.App says otherwise. In-flight requests are cut
// at the signal unless Options.App gives a drain budget. A disagreement
// between the doctor's prediction and a measured stand-in is then about
// Kubernetes and the LB, never about two readings of one manifest.
//
// # The user's own image
//
// With Options.OwnImage the containers are kept as written instead, images,
// commands, probes and hooks included: what the app does on SIGTERM is
// measured rather than modelled. The ConfigMaps, Secrets and ServiceAccount
// the Pod template names are copied from the input (StandIn.Referenced; a
// name the input lacks is an *Error), and StandIn.Images lists what the
// cluster must hold. The load can then tell answers apart by status only.
package standin
