package doctor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	extv1beta1 "k8s.io/api/extensions/v1beta1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
)

// MaxFileSize bounds one input so a wrong path (a log, a disk image) fails
// fast instead of eating memory.
const MaxFileSize = 32 << 20

// maxListDepth bounds nested List kinds; real manifests nest at most once.
const maxListDepth = 8

// MaxObjects bounds the documents and List items of one input. YAML aliases
// let a few hundred bytes name a List item millions of times (items: [*a,
// *a, ...] nested); go-yaml's own alias limit only guards decoding.
const MaxObjects = 100000

// StdinName is how "-" appears in findings.
const StdinName = "<stdin>"

// Source says where an object came from: a file and the line its document (or
// List item) starts on, or the cluster.
type Source struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

func (s Source) String() string {
	switch {
	case s.File == "":
		return "cluster"
	case s.Line > 0:
		return fmt.Sprintf("%s:%d", s.File, s.Line)
	default:
		return s.File
	}
}

// Object is one Kubernetes object from the input. Obj holds the typed object
// for the kinds the doctor analyses (*appsv1.Deployment, *appsv1.StatefulSet,
// *appsv1.DaemonSet, *corev1.Service, *policyv1.PodDisruptionBudget,
// *autoscalingv2.HorizontalPodAutoscaler) and
// nil for every other kind.
type Object struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	Obj        any
	Source     Source
	// routes are the Services an Ingress or a Gateway API route sends to.
	routes []string
	// node is the object's mapping in the YAML tree, for field lines.
	node *yaml.Node
}

// Ref is "kind/namespace/name" in lower case, the form findings use.
func (o *Object) Ref() string {
	return strings.ToLower(o.Kind) + "/" + o.Namespace + "/" + o.Name
}

// Line returns the line of the field at path (map keys, or ints for sequence
// indexes), or of its deepest existing ancestor, or the object's own line.
func (o *Object) Line(path ...any) int {
	if o.node == nil {
		return o.Source.Line
	}
	n, line := o.node, o.node.Line
	for _, p := range path {
		n = resolveAlias(n)
		var next *yaml.Node
		switch k := p.(type) {
		case string:
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == k {
						line = n.Content[i].Line
						next = n.Content[i+1]
						break
					}
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && k >= 0 && k < len(n.Content) {
				next = n.Content[k]
				line = next.Line
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}

// FirstLine returns the line of the first path that exists, else the line
// the last path resolves to.
func (o *Object) FirstLine(paths ...[]any) int {
	for _, p := range paths {
		if o.has(p...) {
			return o.Line(p...)
		}
	}
	if len(paths) == 0 {
		return o.Source.Line
	}
	return o.Line(paths[len(paths)-1]...)
}

func (o *Object) has(path ...any) bool {
	if o.node == nil {
		return false
	}
	n := o.node
	for _, p := range path {
		n = resolveAlias(n)
		var next *yaml.Node
		switch k := p.(type) {
		case string:
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == k {
						next = n.Content[i+1]
						break
					}
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && k >= 0 && k < len(n.Content) {
				next = n.Content[k]
			}
		}
		if next == nil {
			return false
		}
		n = next
	}
	return true
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	// Bounded: an alias can only point backwards, but a fuzzer can build long
	// alias chains.
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 64; i++ {
		n = n.Alias
	}
	return n
}

// Skip is a document the doctor read but does not analyse.
type Skip struct {
	Source Source `json:"source"`
	Reason string `json:"reason"`
}

// Manifests is everything read from the inputs.
type Manifests struct {
	Objects []*Object
	Skipped []Skip
}

func (m *Manifests) add(o *Manifests) {
	m.Objects = append(m.Objects, o.Objects...)
	m.Skipped = append(m.Skipped, o.Skipped...)
}

// InputError is bad input: unreadable or unparseable, with the file and, where
// known, the line. The CLI exits 2 on it.
type InputError struct {
	File string
	Line int
	Err  error
}

func (e *InputError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *InputError) Unwrap() error { return e.Err }

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// yamlParserProblems are the messages of go-yaml's parser (not scanner)
// errors. go-yaml prints their line 0-based (decode.go, parser.fail adds 1
// only for scanner errors), so the doctor adds the missing 1.
var yamlParserProblems = []string{
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected <stream-start>",
	"did not find expected key",
	"did not find expected node content",
	"found duplicate %TAG directive",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found undefined tag handle",
}

// yamlErrorLine lifts the line number out of a go-yaml message ("yaml: line
// 7: did not find expected key"), or returns fallback.
func yamlErrorLine(err error, fallback int) int {
	msg := err.Error()
	m := yamlLineRE.FindStringSubmatch(msg)
	if m == nil {
		return fallback
	}
	n, convErr := strconv.Atoi(m[1])
	if convErr != nil {
		return fallback
	}
	for _, p := range yamlParserProblems {
		if strings.HasSuffix(msg, p) {
			return n + 1
		}
	}
	return n
}

// yamlError turns a go-yaml parse error into an InputError naming the line.
func yamlError(file string, fallbackLine int, err error) *InputError {
	return &InputError{File: file, Line: yamlErrorLine(err, fallbackLine), Err: &yamlMsg{err: err}}
}

// yamlMsg prints a go-yaml error without its own "yaml: line N:" prefix,
// whose number can be 0-based and would contradict the file:line in front.
type yamlMsg struct{ err error }

var yamlPrefixRE = regexp.MustCompile(`^yaml: (line \d+: )?`)

func (e *yamlMsg) Error() string {
	return "invalid YAML: " + yamlPrefixRE.ReplaceAllString(e.err.Error(), "")
}

func (e *yamlMsg) Unwrap() error { return e.err }

// Load reads every path: "-" is stdin, a directory is walked for *.yaml,
// *.yml and *.json (hidden entries skipped), anything else is read as a file.
func Load(paths []string, stdin io.Reader) (*Manifests, error) {
	if len(paths) == 0 {
		return nil, &InputError{File: "(arguments)", Err: errors.New("no input: give files, directories or - for stdin")}
	}
	all := &Manifests{}
	stdinUsed := false
	for _, p := range paths {
		if p == "-" {
			if stdinUsed {
				return nil, &InputError{File: StdinName, Err: errors.New("- given more than once")}
			}
			stdinUsed = true
			if stdin == nil {
				return nil, &InputError{File: StdinName, Err: errors.New("no stdin available")}
			}
			m, err := Read(StdinName, stdin)
			if err != nil {
				return nil, err
			}
			all.add(m)
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, &InputError{File: p, Err: fmt.Errorf("cannot read input: %w", err)}
		}
		if !st.IsDir() {
			m, err := ReadFile(p)
			if err != nil {
				return nil, err
			}
			all.add(m)
			continue
		}
		files, err := manifestFiles(p)
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			all.Skipped = append(all.Skipped, Skip{Source: Source{File: p}, Reason: "directory holds no *.yaml, *.yml or *.json file"})
		}
		for _, f := range files {
			m, err := ReadFile(f)
			if err != nil {
				return nil, err
			}
			all.add(m)
		}
	}
	return all, nil
}

func manifestFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return &InputError{File: path, Err: fmt.Errorf("cannot walk directory: %w", err)}
		}
		if path != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		var ie *InputError
		if errors.As(err, &ie) {
			return nil, ie
		}
		return nil, &InputError{File: dir, Err: err}
	}
	sort.Strings(files)
	return files, nil
}

// ReadFile reads one manifest file.
func ReadFile(path string) (*Manifests, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &InputError{File: path, Err: fmt.Errorf("cannot open: %w", err)}
	}
	defer f.Close()
	return Read(path, f)
}

// Read parses a YAML (or JSON) stream with any number of documents. name is
// used in sources and errors.
func Read(name string, r io.Reader) (*Manifests, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, &InputError{File: name, Err: fmt.Errorf("read failed: %w", err)}
	}
	if len(data) > MaxFileSize {
		return nil, &InputError{File: name, Err: fmt.Errorf("larger than %d MiB; is this a manifest?", MaxFileSize>>20)}
	}
	return parse(name, data)
}

func parse(name string, data []byte) (*Manifests, error) {
	m := &Manifests{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	lastLine := 1
	budget := MaxObjects
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return m, nil
		}
		if err != nil {
			ie := yamlError(name, lastLine, err)
			// An error at the end of the stream (an unclosed bracket) is
			// reported past the last line; point at the last line with text.
			ie.Line = min(ie.Line, lastContentLine(data))
			return nil, ie
		}
		lastLine = max(doc.Line, 1)
		if len(doc.Content) == 0 {
			continue
		}
		root := resolveAlias(doc.Content[0])
		if root == nil {
			continue
		}
		if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
			continue // an empty document: "---" followed by a comment
		}
		if err := checkExpansion(root); err != nil {
			return nil, &InputError{File: name, Line: root.Line, Err: err}
		}
		if err := addObject(m, name, root, 0, &budget); err != nil {
			return nil, err
		}
	}
}

func lastContentLine(data []byte) int {
	lines := bytes.Split(data, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if len(bytes.TrimSpace(lines[i])) > 0 {
			return i + 1
		}
	}
	return 1
}

// header is what every object has.
type header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

func addObject(m *Manifests, file string, n *yaml.Node, depth int, budget *int) error {
	src := Source{File: file, Line: n.Line}
	if *budget--; *budget < 0 {
		return &InputError{File: file, Line: n.Line, Err: fmt.Errorf("more than %d objects (documents and List items, counting YAML aliases); split the input", MaxObjects)}
	}
	if n.Kind != yaml.MappingNode {
		m.Skipped = append(m.Skipped, Skip{Source: src, Reason: "not a Kubernetes object (the document is not a mapping)"})
		return nil
	}
	// The header is read from the tree, not decoded: decoding a List
	// would decode every item twice.
	h, line, err := nodeHeader(n)
	if err != nil {
		return &InputError{File: file, Line: line, Err: err}
	}
	if h.Kind == "" || h.APIVersion == "" {
		m.Skipped = append(m.Skipped, Skip{Source: src, Reason: "not a Kubernetes object (no apiVersion or kind)"})
		return nil
	}
	if isList(h.Kind) {
		if depth >= maxListDepth {
			return &InputError{File: file, Line: n.Line, Err: fmt.Errorf("%s nested deeper than %d levels", h.Kind, maxListDepth)}
		}
		items := mapValue(n, "items")
		if items == nil {
			return nil // an empty List
		}
		if items.Kind != yaml.SequenceNode {
			if items.Kind == yaml.ScalarNode && items.ShortTag() == "!!null" {
				return nil
			}
			return &InputError{File: file, Line: items.Line, Err: fmt.Errorf("%s items must be a list", h.Kind)}
		}
		for _, it := range items.Content {
			if err := addObject(m, file, resolveAlias(it), depth+1, budget); err != nil {
				return err
			}
		}
		return nil
	}
	raw, err := nodeJSON(n)
	if err != nil {
		// Decoder errors ("line 5: mapping key already defined") are
		// 1-based and absolute in the stream.
		return &InputError{File: file, Line: yamlErrorLine(err, n.Line), Err: err}
	}
	obj := &Object{
		APIVersion: h.APIVersion, Kind: h.Kind, Name: h.Metadata.Name, Namespace: h.Metadata.Namespace,
		Source: src, node: n,
	}
	if err := decodeTyped(obj, raw); err != nil {
		return &InputError{File: file, Line: typeErrorLine(obj, err), Err: fmt.Errorf("%s %q: %w", h.Kind, h.Metadata.Name, err)}
	}
	if obj.Obj == nil && obj.routes == nil {
		m.Skipped = append(m.Skipped, Skip{Source: src, Reason: fmt.Sprintf("%s %s is not analysed", h.APIVersion, h.Kind)})
	}
	m.Objects = append(m.Objects, obj)
	return nil
}

// nodeHeader reads apiVersion, kind, metadata.name and metadata.namespace
// from the tree. A field of the wrong shape is an error with its line.
func nodeHeader(n *yaml.Node) (header, int, error) {
	var h header
	str := func(parent *yaml.Node, key string) (string, int, error) {
		v := mapValue(parent, key)
		if v == nil || (v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null") {
			return "", 0, nil
		}
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
			return "", v.Line, fmt.Errorf("%s must be a string", key)
		}
		return v.Value, 0, nil
	}
	var err error
	var line int
	if h.APIVersion, line, err = str(n, "apiVersion"); err != nil {
		return h, line, err
	}
	if h.Kind, line, err = str(n, "kind"); err != nil {
		return h, line, err
	}
	md := mapValue(n, "metadata")
	if md == nil || (md.Kind == yaml.ScalarNode && md.ShortTag() == "!!null") {
		return h, 0, nil
	}
	if md.Kind != yaml.MappingNode {
		return h, md.Line, errors.New("metadata must be a mapping")
	}
	if h.Metadata.Name, line, err = str(md, "name"); err != nil {
		return h, line, fmt.Errorf("metadata.%w", err)
	}
	if h.Metadata.Namespace, line, err = str(md, "namespace"); err != nil {
		return h, line, fmt.Errorf("metadata.%w", err)
	}
	return h, 0, nil
}

// checkExpansion refuses a document whose aliases expand it far beyond what
// is written: decoding it would cost time and memory out of proportion to the
// input (go-yaml's own alias limit allows millions of nodes).
func checkExpansion(root *yaml.Node) error {
	literal := countNodes(root, false, math.MaxInt)
	limit := 4*literal + 100000
	if got := countNodes(root, true, limit); got > limit {
		return fmt.Errorf("YAML aliases expand this document to more than %d nodes (%d written); expand them or split the input", limit, literal)
	}
	return nil
}

// countNodes counts nodes, following aliases if asked, and stops past limit.
func countNodes(root *yaml.Node, followAliases bool, limit int) int {
	count := 0
	stack := []*yaml.Node{root}
	for len(stack) > 0 && count <= limit {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n == nil {
			continue
		}
		count++
		if n.Kind == yaml.AliasNode {
			if followAliases {
				stack = append(stack, n.Alias)
			}
			continue
		}
		stack = append(stack, n.Content...)
	}
	return count
}

func isList(kind string) bool {
	return kind == "List" || (strings.HasSuffix(kind, "List") && len(kind) > len("List"))
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	n = resolveAlias(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return resolveAlias(n.Content[i+1])
		}
	}
	return nil
}

// typeErrorLine finds the line of the field a JSON type error names
// ("spec.replicas"), falling back to the object's line.
func typeErrorLine(o *Object, err error) int {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		var path []any
		for _, p := range strings.Split(te.Field, ".") {
			path = append(path, p)
		}
		return o.Line(path...)
	}
	return o.Source.Line
}

// nodeJSON converts a YAML mapping to JSON the way the API machinery does
// (sigs.k8s.io/yaml): non-string keys become strings.
func nodeJSON(n *yaml.Node) ([]byte, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	v, err := jsonable(v, 0)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("cannot convert to JSON: %w", err)
	}
	return raw, nil
}

func jsonable(v any, depth int) (any, error) {
	if depth > 10000 {
		return nil, errors.New("nested too deeply")
	}
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			cv, err := jsonable(c, depth+1)
			if err != nil {
				return nil, err
			}
			t[k] = cv
		}
		return t, nil
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, c := range t {
			cv, err := jsonable(c, depth+1)
			if err != nil {
				return nil, err
			}
			out[fmt.Sprint(k)] = cv
		}
		return out, nil
	case []any:
		for i, c := range t {
			cv, err := jsonable(c, depth+1)
			if err != nil {
				return nil, err
			}
			t[i] = cv
		}
		return t, nil
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return nil, fmt.Errorf("number %v has no JSON form", t)
		}
		return t, nil
	default:
		return t, nil
	}
}

// decodeTyped fills obj.Obj (or obj.routes) for the kinds the doctor reads.
// Older API versions are decoded into the current types: the fields the
// rules read have not changed shape.
func decodeTyped(obj *Object, raw []byte) error {
	group := obj.APIVersion
	if i := strings.LastIndex(group, "/"); i >= 0 {
		group = group[:i]
	} else {
		group = ""
	}
	into := func(v any) error {
		if err := json.Unmarshal(raw, v); err != nil {
			return err
		}
		obj.Obj = v
		return nil
	}
	switch {
	case obj.Kind == "Service" && group == "":
		return into(&corev1.Service{})
	case obj.Kind == "Deployment" && (group == "apps" || group == "extensions"):
		return into(&appsv1.Deployment{})
	case obj.Kind == "StatefulSet" && group == "apps":
		return into(&appsv1.StatefulSet{})
	case obj.Kind == "DaemonSet" && (group == "apps" || group == "extensions"):
		return into(&appsv1.DaemonSet{})
	case obj.Kind == "PodDisruptionBudget" && group == "policy":
		return into(&policyv1.PodDisruptionBudget{})
	case obj.Kind == "ReplicationController" && group == "":
		return into(&corev1.ReplicationController{})
	case obj.Kind == "Rollout" && group == "argoproj.io":
		return into(&argoRollout{})
	case obj.Kind == "HorizontalPodAutoscaler" && group == "autoscaling":
		// v1, v2beta1, v2beta2 and v2 share scaleTargetRef, minReplicas and
		// maxReplicas, the fields the doctor reads.
		return into(&autoscalingv2.HorizontalPodAutoscaler{})
	case obj.Kind == "Ingress" && group == "networking.k8s.io" && obj.APIVersion == "networking.k8s.io/v1":
		var ing networkingv1.Ingress
		if err := json.Unmarshal(raw, &ing); err != nil {
			return err
		}
		obj.routes = ingressServices(&ing)
	case obj.Kind == "Ingress" && (group == "extensions" || group == "networking.k8s.io"):
		// extensions/v1beta1 and networking.k8s.io/v1beta1 share this shape
		// (serviceName/servicePort), the Ingress of incident keepalive-unready.
		var ing extv1beta1.Ingress
		if err := json.Unmarshal(raw, &ing); err != nil {
			return err
		}
		obj.routes = legacyIngressServices(&ing)
	case (obj.Kind == "HTTPRoute" || obj.Kind == "GRPCRoute") && group == "gateway.networking.k8s.io":
		var rt gatewayRoute
		if err := json.Unmarshal(raw, &rt); err != nil {
			return err
		}
		obj.routes = rt.services()
	}
	return nil
}

func ingressServices(ing *networkingv1.Ingress) []string {
	out := []string{}
	add := func(b *networkingv1.IngressBackend) {
		if b != nil && b.Service != nil && b.Service.Name != "" {
			out = append(out, b.Service.Name)
		}
	}
	add(ing.Spec.DefaultBackend)
	for _, r := range ing.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		for i := range r.HTTP.Paths {
			add(&r.HTTP.Paths[i].Backend)
		}
	}
	return out
}

func legacyIngressServices(ing *extv1beta1.Ingress) []string {
	out := []string{}
	add := func(b *extv1beta1.IngressBackend) {
		if b != nil && b.ServiceName != "" {
			out = append(out, b.ServiceName)
		}
	}
	add(ing.Spec.Backend)
	for _, r := range ing.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		for i := range r.HTTP.Paths {
			add(&r.HTTP.Paths[i].Backend)
		}
	}
	return out
}

// gatewayRoute is the part of a Gateway API route the doctor needs; the
// Gateway API types are not a dependency of this module.
type gatewayRoute struct {
	Spec struct {
		Rules []struct {
			BackendRefs []struct {
				Group *string `json:"group"`
				Kind  *string `json:"kind"`
				Name  string  `json:"name"`
			} `json:"backendRefs"`
		} `json:"rules"`
	} `json:"spec"`
}

func (r gatewayRoute) services() []string {
	out := []string{}
	for _, rule := range r.Spec.Rules {
		for _, b := range rule.BackendRefs {
			if (b.Kind == nil || *b.Kind == "Service") && (b.Group == nil || *b.Group == "") && b.Name != "" {
				out = append(out, b.Name)
			}
		}
	}
	return out
}
