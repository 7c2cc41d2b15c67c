package doctor

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	extv1beta1 "k8s.io/api/extensions/v1beta1"
	networkingv1 "k8s.io/api/networking/v1"

	"zerodrop.dev/zerodrop/apis/contract"
)

// A template placeholder left in quotes ("{{ .Values.service.type }}", or
// envsubst's and Flux's "${POLICY}") is a string the doctor would read as
// it stands: a Service type that is no LoadBalancer, an LB annotation that
// names no LB, a backend that names no Service. Each field below decides
// what a Service is judged against, or whether it is judged at all, so a
// placeholder in one is refused as bad input (exit 2) with the field and a
// reason to render the template first, never judged as a literal value. An
// unquoted placeholder is already a YAML error; a quoted one is as
// unreadable.

// isPlaceholder reports whether v holds a template placeholder.
func isPlaceholder(v string) bool {
	return strings.Contains(v, "{{") || strings.Contains(v, "${")
}

type placeholderError struct {
	field   string // as the message names it
	path    []any  // in the object, for its line
	value   string
	decides string // what the field decides, "" when plain
}

func (e *placeholderError) Error() string {
	decides := ""
	if e.decides != "" {
		decides = " (it decides " + e.decides + ")"
	}
	return fmt.Sprintf("%s is a template placeholder (%q), which the doctor cannot judge%s: render the template first "+
		"(helm template ... | zerodrop doctor -) and check what it renders", e.field, e.value, decides)
}

// field is one string field of an object checked for a placeholder.
type field struct {
	name    string
	path    []any
	value   string
	decides string
}

func firstPlaceholder(fields []field) error {
	for _, f := range fields {
		if isPlaceholder(f.value) {
			return &placeholderError{field: f.name, path: f.path, value: f.value, decides: f.decides}
		}
	}
	return nil
}

// lbChoosingAnnotations are the Service annotations whose value chooses
// the LB it is judged against (serviceProfile: zerodrop's own, every
// lbHint that reads a value, and the ones routeHint reads on the Service),
// in a fixed order.
var lbChoosingAnnotations = func() []string {
	out := []string{contract.LBProfileAnnotation, annALBTargetType, annGKENEG}
	for _, h := range lbHints {
		if h.annotation != "" && h.value != "" && !slices.Contains(out, h.annotation) {
			out = append(out, h.annotation)
		}
	}
	return out
}()

func annotationField(ann map[string]string, key, decides string) field {
	return field{name: "annotation " + key, path: []any{"metadata", "annotations", key}, value: ann[key], decides: decides}
}

// placeholders refuses a decoded object (Service, Ingress, route, Gateway,
// GatewayClass) that holds a placeholder in a field that decides the
// verdict.
func placeholders(v any) error {
	var fields []field
	switch o := v.(type) {
	case *corev1.Service:
		// As it stands, a placeholder type is no LoadBalancer and a
		// placeholder policy no Local: "nothing to check" for a chart that
		// may well drop requests.
		fields = append(fields,
			field{name: "spec.type", path: []any{"spec", "type"}, value: string(o.Spec.Type)},
			field{name: "spec.externalTrafficPolicy", path: []any{"spec", "externalTrafficPolicy"}, value: string(o.Spec.ExternalTrafficPolicy)})
		const lb = "which LB the Service is judged against"
		for _, k := range lbChoosingAnnotations {
			fields = append(fields, annotationField(o.Annotations, k, lb))
		}
		if c := o.Spec.LoadBalancerClass; c != nil {
			fields = append(fields, field{name: "spec.loadBalancerClass", path: []any{"spec", "loadBalancerClass"}, value: *c, decides: lb})
		}
	case *networkingv1.Ingress:
		fields = ingressClassFields(o.Annotations)
		if c := o.Spec.IngressClassName; c != nil {
			fields = append(fields, field{name: "spec.ingressClassName", path: []any{"spec", "ingressClassName"}, value: *c, decides: ingressLB})
		}
		backend := func(name string, path []any, b *networkingv1.IngressBackend) {
			if b != nil && b.Service != nil {
				fields = append(fields, field{name: name, path: append(path, "service", "name"), value: b.Service.Name, decides: ingressSends})
			}
		}
		backend("spec.defaultBackend.service.name", []any{"spec", "defaultBackend"}, o.Spec.DefaultBackend)
		for i, r := range o.Spec.Rules {
			if r.HTTP == nil {
				continue
			}
			for j := range r.HTTP.Paths {
				backend(fmt.Sprintf("spec.rules[%d].http.paths[%d].backend.service.name", i, j),
					[]any{"spec", "rules", i, "http", "paths", j, "backend"}, &r.HTTP.Paths[j].Backend)
			}
		}
	case *extv1beta1.Ingress:
		fields = ingressClassFields(o.Annotations)
		if c := o.Spec.IngressClassName; c != nil {
			fields = append(fields, field{name: "spec.ingressClassName", path: []any{"spec", "ingressClassName"}, value: *c, decides: ingressLB})
		}
		if b := o.Spec.Backend; b != nil {
			fields = append(fields, field{name: "spec.backend.serviceName", path: []any{"spec", "backend", "serviceName"}, value: b.ServiceName, decides: ingressSends})
		}
		for i, r := range o.Spec.Rules {
			if r.HTTP == nil {
				continue
			}
			for j, p := range r.HTTP.Paths {
				fields = append(fields, field{name: fmt.Sprintf("spec.rules[%d].http.paths[%d].backend.serviceName", i, j),
					path: []any{"spec", "rules", i, "http", "paths", j, "backend", "serviceName"}, value: p.Backend.ServiceName, decides: ingressSends})
			}
		}
	case *gatewayRoute:
		for i, p := range o.Spec.ParentRefs {
			if (p.Group == nil || *p.Group == gatewayGroup) && (p.Kind == nil || *p.Kind == "Gateway") {
				fields = append(fields, field{name: fmt.Sprintf("spec.parentRefs[%d].name", i), path: []any{"spec", "parentRefs", i, "name"},
					value: p.Name, decides: "which Gateway carries the route, and so the LB its Services are judged against"})
			}
		}
		for i, r := range o.Spec.Rules {
			for j, b := range r.BackendRefs {
				if (b.Kind == nil || *b.Kind == "Service") && (b.Group == nil || *b.Group == "") {
					fields = append(fields, field{name: fmt.Sprintf("spec.rules[%d].backendRefs[%d].name", i, j),
						path: []any{"spec", "rules", i, "backendRefs", j, "name"}, value: b.Name, decides: "which Service the route sends to"})
				}
			}
		}
	case *gatewayObject:
		fields = append(fields, field{name: "spec.gatewayClassName", path: []any{"spec", "gatewayClassName"}, value: o.Spec.GatewayClassName,
			decides: "what carries the Gateway's routes, and so the LB their Services are judged against"})
	case *gatewayClassObject:
		fields = append(fields, field{name: "spec.controllerName", path: []any{"spec", "controllerName"}, value: o.Spec.ControllerName,
			decides: "what carries the class's routes, and so the LB their Services are judged against"})
	}
	return firstPlaceholder(fields)
}

const (
	ingressLB    = "which LB the Ingress's Services are judged against"
	ingressSends = "which Service the Ingress sends to"
)

// ingressClassFields are the Ingress annotations routeHint reads.
func ingressClassFields(ann map[string]string) []field {
	return []field{annotationField(ann, annIngressClass, ingressLB), annotationField(ann, annALBTargetType, ingressLB)}
}
