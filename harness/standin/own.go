package standin

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"zerodrop.dev/zerodrop/harness/doctor"
)

// ownTemplate keeps the user's Pod template as written, images and all
// (Options.OwnImage): what the app really does on SIGTERM and with
// keep-alive is then measured, not modelled. The load cannot attribute an
// answer to a pod (the app does not say which it is), so it counts them by
// status. What the Pod names (ConfigMaps, Secrets, its ServiceAccount) is
// copied from the input into the stand-in's namespace; a name the input
// does not hold is an error, since the Pod would never start.
func ownTemplate(in *corev1.PodTemplateSpec, srcNS string, opts Options, wref string, change changeFunc) (*corev1.PodTemplateSpec, []Container, []runtime.Object, []string, error) {
	tpl := in.DeepCopy()
	spec := &tpl.Spec
	tplField := "spec.template.spec."
	drop := func(field string, set bool, was, why string) {
		if set {
			change(wref, tplField+field, was, "", why)
		}
	}
	dropClusterOwned(spec, drop)
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			change(wref, tplField+"volumes["+v.Name+"]", "a persistent volume claim", "emptyDir",
				"claims would need a provisioner and volumes the test cluster does not have; the data does not outlive a Pod")
			v.VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
		}
	}

	refs, err := copyReferenced(spec, srcNS, opts, wref, change)
	if err != nil {
		return nil, nil, nil, nil, err
	}

	var images []string
	pull := func(c *corev1.Container, field string) {
		if !slices.Contains(images, c.Image) {
			images = append(images, c.Image)
		}
		if opts.PullPolicy != "" && c.ImagePullPolicy != opts.PullPolicy {
			change(wref, field+".imagePullPolicy", string(c.ImagePullPolicy), string(opts.PullPolicy),
				"the image is loaded into the test cluster's nodes, which pull nothing")
			c.ImagePullPolicy = opts.PullPolicy
		}
		if len(c.Resources.Requests)+len(c.Resources.Limits)+len(c.Resources.Claims) > 0 {
			change(wref, field+".resources", "set", "", "the test cluster's nodes are small; requests sized for the user's would leave Pods pending")
			c.Resources = corev1.ResourceRequirements{}
		}
	}
	for i := range spec.InitContainers {
		pull(&spec.InitContainers[i], fmt.Sprintf("%sinitContainers[%s]", tplField, spec.InitContainers[i].Name))
	}
	var out []Container
	for i := range spec.Containers {
		c := &spec.Containers[i]
		pull(c, fmt.Sprintf("%scontainers[%s]", tplField, c.Name))
		var listen []int32
		for _, p := range c.Ports {
			if p.Protocol == "" || p.Protocol == corev1.ProtocolTCP {
				listen = append(listen, p.ContainerPort)
			}
		}
		slices.Sort(listen)
		out = append(out, Container{Name: c.Name, Listen: listen, Image: c.Image,
			Ends: "as your image does (" + c.Image + ", run as written)", BehaviourFrom: "your own image (--image=own): measured, not modelled"})
	}
	return tpl, out, refs, images, nil
}

// copyReferenced copies the ConfigMaps, Secrets and ServiceAccount the Pod
// template names from the input into the stand-in's namespace.
func copyReferenced(spec *corev1.PodSpec, srcNS string, opts Options, wref string, change changeFunc) ([]runtime.Object, error) {
	type ref struct{ kind, name string }
	need := map[ref]bool{} // value: optional
	add := func(kind, name string, optional *bool) {
		if name == "" {
			return
		}
		r := ref{kind, name}
		opt := optional != nil && *optional
		if o, seen := need[r]; !seen || (o && !opt) {
			need[r] = opt
		}
	}
	for _, v := range spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			add("ConfigMap", v.ConfigMap.Name, v.ConfigMap.Optional)
		case v.Secret != nil:
			add("Secret", v.Secret.SecretName, v.Secret.Optional)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					add("ConfigMap", s.ConfigMap.Name, s.ConfigMap.Optional)
				}
				if s.Secret != nil {
					add("Secret", s.Secret.Name, s.Secret.Optional)
				}
			}
		}
	}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			for _, e := range c.EnvFrom {
				if e.ConfigMapRef != nil {
					add("ConfigMap", e.ConfigMapRef.Name, e.ConfigMapRef.Optional)
				}
				if e.SecretRef != nil {
					add("Secret", e.SecretRef.Name, e.SecretRef.Optional)
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
					add("ConfigMap", r.Name, r.Optional)
				}
				if r := e.ValueFrom.SecretKeyRef; r != nil {
					add("Secret", r.Name, r.Optional)
				}
			}
		}
	}
	loaded := opts.PullPolicy == corev1.PullNever
	for _, s := range spec.ImagePullSecrets {
		// A loaded image needs no pull secret; one the cluster pulls does,
		// and the test namespace has only what the input brings.
		add("Secret", s.Name, &loaded)
	}
	sa := spec.ServiceAccountName
	if sa == "" {
		sa = spec.DeprecatedServiceAccount
	}
	if sa != "" && sa != "default" { // every namespace has its own "default"
		add("ServiceAccount", sa, nil)
	}

	held := map[ref]*doctor.Object{}
	for _, o := range opts.referenced {
		ns := o.Namespace
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		if ns == srcNS {
			held[ref{o.Kind, o.Name}] = o
		}
	}
	keys := slices.SortedFunc(maps.Keys(need), func(a, b ref) int { return strings.Compare(a.kind+"/"+a.name, b.kind+"/"+b.name) })
	var out []runtime.Object
	var missing []string
	for _, r := range keys {
		o, ok := held[r]
		if !ok {
			if !need[r] {
				missing = append(missing, strings.ToLower(r.kind)+"/"+srcNS+"/"+r.name)
			}
			continue
		}
		switch v := o.Obj.(type) {
		case *corev1.ConfigMap:
			out = append(out, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: cleanMeta(v.ObjectMeta, opts.Namespace), Data: v.Data, BinaryData: v.BinaryData, Immutable: v.Immutable})
		case *corev1.Secret:
			out = append(out, &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
				ObjectMeta: cleanMeta(v.ObjectMeta, opts.Namespace), Data: v.Data, StringData: v.StringData, Type: v.Type, Immutable: v.Immutable})
		case *corev1.ServiceAccount:
			out = append(out, &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
				ObjectMeta: cleanMeta(v.ObjectMeta, opts.Namespace), AutomountServiceAccountToken: v.AutomountServiceAccountToken})
			change(wref, "spec.template.spec.serviceAccountName", "", sa+" (copied; its Roles and bindings are not)",
				"RBAC is cluster policy the stand-in does not create: an app that calls the Kubernetes API may be refused there")
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("the Pod template names %s, which the input does not hold: add them to the files (--image=own runs your image with what it names, copied into the test namespace)",
			strings.Join(missing, ", "))
	}
	kept := spec.ImagePullSecrets[:0]
	for _, s := range spec.ImagePullSecrets {
		if _, ok := held[ref{"Secret", s.Name}]; ok {
			kept = append(kept, s)
		} else {
			change(wref, "spec.template.spec.imagePullSecrets", s.Name, "", "not in the input, and not needed: the image is loaded, not pulled")
		}
	}
	spec.ImagePullSecrets = kept
	if len(kept) == 0 {
		spec.ImagePullSecrets = nil
	}
	return out, nil
}
