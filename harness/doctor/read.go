package doctor

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

// MaxFileSize bounds one input so a wrong path (a log, a disk image) fails
// fast instead of eating memory.
const MaxFileSize = 32 << 20

// MaxInputSize bounds all the inputs of one run together, stdin included,
// as MaxFileSize bounds one: a directory of many small files cannot add up
// to more memory than one large file may take. Files are measured before
// any is parsed, and a run over the budget is refused before anything is
// read; stdin (and a pipe named as a file) gets what the files leave and is
// read into memory up to that, refused the moment it crosses, before any
// input is parsed (LoadContext). 32 MiB of nothing but Service, Deployment and PDB triples
// took about 1.4 GB of memory whether in 2 files or 10 (README, "zerodrop
// doctor").
const MaxInputSize = 32 << 20

// maxListDepth bounds nested List kinds; real manifests nest at most once.
const maxListDepth = 8

// MaxObjects bounds the documents and List items of one input. YAML aliases
// let a few hundred bytes name a List item millions of times (items: [*a,
// *a, ...] nested); go-yaml's own alias limit only guards decoding. Every
// input's documents are counted before any input is parsed
// (countDocuments), so one of too many documents is refused before
// anything is decoded; List items and aliases are counted as they are
// decoded.
const MaxObjects = 100000

// Limits bounds what one Load reads; DefaultLimits are the constants
// above. Tests pass small ones.
type Limits struct {
	// FileSize bounds one input, a file or stdin.
	FileSize int64
	// InputSize bounds all the inputs of one run together.
	InputSize int64
	// Objects bounds the documents and List items of one input.
	Objects int
}

// DefaultLimits are MaxFileSize, MaxInputSize and MaxObjects.
func DefaultLimits() Limits {
	return Limits{FileSize: MaxFileSize, InputSize: MaxInputSize, Objects: MaxObjects}
}

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
	// routes are the Services an Ingress or a Gateway API route sends to:
	// a name in the object's namespace, or "namespace/name".
	routes []string
	// parents are a Gateway API route's parentRefs: the Gateways whose
	// data plane or LB carries it.
	parents []parentRef
	// lines is the shape of the object's YAML tree, for field lines.
	lines *lineNode
}

// Ref is "kind/namespace/name" in lower case, the form findings use.
func (o *Object) Ref() string {
	return strings.ToLower(o.Kind) + "/" + o.Namespace + "/" + o.Name
}

// Line returns the line of the field at path (map keys, or ints for sequence
// indexes), or of its deepest existing ancestor, or the object's own line.
func (o *Object) Line(path ...any) int {
	line, _ := o.lines.find(path, o.Source.Line)
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
	_, ok := o.lines.find(path, o.Source.Line)
	return ok && o.lines != nil
}

// lineNode is what the doctor keeps of an object's YAML tree: the shape and
// the line of every field, not its values or comments (a yaml.Node is about
// 200 bytes; keeping every analysed object's tree was most of the memory on
// large inputs).
type lineNode struct {
	// line is where a path reaching this node points: the key's line for a
	// mapping value, the item's for a sequence item.
	line int32
	seq  bool
	keys []string // mapping keys, keys[i] names kids[i]
	kids []lineNode
}

// lineTree converts a YAML tree, following aliases (bounded by
// checkExpansion before any object is built).
func lineTree(n *yaml.Node, line int) lineNode {
	n = resolveAlias(n)
	ln := lineNode{line: int32(line)}
	if n == nil {
		return ln
	}
	switch n.Kind {
	case yaml.MappingNode:
		ln.keys = make([]string, 0, len(n.Content)/2)
		ln.kids = make([]lineNode, 0, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			ln.keys = append(ln.keys, n.Content[i].Value)
			ln.kids = append(ln.kids, lineTree(n.Content[i+1], n.Content[i].Line))
		}
	case yaml.SequenceNode:
		ln.seq = true
		ln.kids = make([]lineNode, len(n.Content))
		for i, it := range n.Content {
			ln.kids[i] = lineTree(it, it.Line)
		}
	}
	return ln
}

// find walks path (map keys as strings, sequence indexes as ints) and
// returns the line of the deepest field that exists and whether all of it
// does; a nil tree answers fallback.
func (n *lineNode) find(path []any, fallback int) (int, bool) {
	if n == nil {
		return fallback, false
	}
	line := int(n.line)
	for _, p := range path {
		var next *lineNode
		switch k := p.(type) {
		case string:
			if !n.seq {
				for i, key := range n.keys {
					if key == k {
						next = &n.kids[i]
						break
					}
				}
			}
		case int:
			if n.seq && k >= 0 && k < len(n.kids) {
				next = &n.kids[k]
			}
		}
		if next == nil {
			return line, false
		}
		line, n = int(next.line), next
	}
	return line, true
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

// Manifests is what was read from the inputs: the objects of the kinds the
// rules read, and a Skip for every other document.
type Manifests struct {
	Objects []*Object
	Skipped []Skip
	// Warnings are what was read differently from how it is written, as
	// the API server would (a key defined twice: the last value).
	Warnings []Skip
	// Referenced are the ConfigMaps, Secrets and ServiceAccounts of the
	// input, decoded but not analysed (each is in Skipped too): what a Pod
	// template may need to run as written (`zerodrop test --image=own`).
	Referenced []*Object
}

// SetDefaultNamespace puts every object read without a namespace, those
// the rules read and those a Pod may name alike, in ns (what
// `kubectl apply -n ns` does).
func (m *Manifests) SetDefaultNamespace(ns string) {
	for _, list := range [][]*Object{m.Objects, m.Referenced} {
		for _, o := range list {
			if o.Namespace == "" {
				o.Namespace = ns
			}
		}
	}
}

func (m *Manifests) add(o *Manifests) {
	m.Objects = append(m.Objects, o.Objects...)
	m.Skipped = append(m.Skipped, o.Skipped...)
	m.Warnings = append(m.Warnings, o.Warnings...)
	m.Referenced = append(m.Referenced, o.Referenced...)
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
	return LoadContext(context.Background(), paths, stdin, DefaultLimits())
}

// LoadContext is Load within lim, stopping with ctx's error (wrapped in an
// InputError) once ctx is done: a read blocked on stdin is left behind, so
// a caller that gives up may exit at once. Nothing is parsed before every
// input is within the limits: files are measured, stdin and pipes read
// into memory within what the files leave, and every input's documents
// counted; then the inputs are parsed in order.
func LoadContext(ctx context.Context, paths []string, stdin io.Reader, lim Limits) (*Manifests, error) {
	if len(paths) == 0 {
		return nil, &InputError{File: "(arguments)", Err: errors.New("no input: give files, directories or - for stdin")}
	}
	inputs := resolveInputs(paths)
	measured, err := measureInputs(inputs, lim)
	if err != nil {
		return nil, err
	}
	// What the measured files leave of the run's budget is for the inputs
	// that cannot be measured before they are read: stdin and pipes.
	left := lim.InputSize - measured
	read := make([][]byte, len(inputs)) // stdin's and pipes' bytes
	stdinUsed := false
	for i, in := range inputs {
		if err := ctx.Err(); err != nil {
			return nil, interrupted(cmp.Or(in.file, "(input)"), err)
		}
		switch {
		case in.err != nil:
			return nil, in.err
		case in.skip != nil:
		case in.file == "-":
			if stdinUsed {
				return nil, &InputError{File: StdinName, Err: errors.New("- given more than once")}
			}
			stdinUsed = true
			if stdin == nil {
				return nil, &InputError{File: StdinName, Err: errors.New("no stdin available")}
			}
			if read[i], err = readUnmeasured(ctx, StdinName, stdin, lim, &left); err != nil {
				return nil, err
			}
		default:
			if read[i], err = countFile(ctx, in.file, lim, &left); err != nil {
				return nil, err
			}
		}
	}
	all := &Manifests{}
	for i, in := range inputs {
		var m *Manifests
		switch {
		case in.skip != nil:
			all.Skipped = append(all.Skipped, *in.skip)
			continue
		case read[i] != nil:
			name := in.file
			if name == "-" {
				name = StdinName
			}
			m, err = readStream(ctx, name, bytes.NewReader(read[i]), lim)
		default:
			m, err = parseFile(ctx, in.file, lim)
		}
		if err != nil {
			return nil, err
		}
		all.add(m)
	}
	return all, nil
}

// interrupted is the error of a read that ctx stopped.
func interrupted(file string, err error) *InputError {
	if file == "-" {
		file = StdinName
	}
	return &InputError{File: file, Err: fmt.Errorf("reading stopped before the input was read whole: %w", err)}
}

// input is one thing Load reads, in order: a file ("-" for stdin), a
// directory's note, or the error reading a path gave, reported when Load
// reaches it.
type input struct {
	file string
	skip *Skip
	err  error
}

// resolveInputs lists the files the paths name, directories walked once.
func resolveInputs(paths []string) []input {
	var out []input
	for _, p := range paths {
		if p == "-" {
			out = append(out, input{file: p})
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			out = append(out, input{err: &InputError{File: p, Err: fmt.Errorf("cannot read input: %w", err)}})
			continue
		}
		if !st.IsDir() {
			out = append(out, input{file: p})
			continue
		}
		files, err := manifestFiles(p)
		if err != nil {
			out = append(out, input{err: err})
			continue
		}
		if len(files) == 0 {
			out = append(out, input{skip: &Skip{Source: Source{File: p}, Reason: "directory holds no *.yaml, *.yml or *.json file"}})
		}
		for _, f := range files {
			out = append(out, input{file: f})
		}
	}
	return out
}

// measureInputs refuses, before any file is parsed, a file over
// lim.FileSize and files over lim.InputSize together, and returns the size
// of the files it measured (stdin and pipes are bounded as they are read,
// by what is left). Unreadable paths are left to Load, which names them.
func measureInputs(inputs []input, lim Limits) (int64, error) {
	var total int64
	n := 0
	for _, in := range inputs {
		if in.file == "" || in.file == "-" {
			continue
		}
		st, err := os.Stat(in.file)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		if st.Size() > lim.FileSize {
			return 0, &InputError{File: in.file, Err: fmt.Errorf("%s, larger than %s; is this a manifest?", mib(st.Size()), mib(lim.FileSize))}
		}
		total += st.Size()
		n++
		if total > lim.InputSize {
			return 0, &InputError{File: in.file, Err: fmt.Errorf("the input reaches %s by its %d files up to this one, more than the %s one run reads: check fewer files at a time",
				mib(total), n, mib(lim.InputSize))}
		}
	}
	return total, nil
}

// mib is a size for people: whole MiB, or bytes below one.
func mib(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%d MiB", n>>20)
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
	left := int64(MaxInputSize)
	b, err := countFile(context.Background(), path, DefaultLimits(), &left)
	if err != nil {
		return nil, err
	}
	if b != nil {
		return readStream(context.Background(), path, bytes.NewReader(b), DefaultLimits())
	}
	return parseFile(context.Background(), path, DefaultLimits())
}

// countFile counts the documents of one file before it is parsed: a
// regular one (measured already) where it is, anything else (a pipe,
// /dev/stdin) once read into memory as stdin is, which it returns (nil for
// a regular file).
func countFile(ctx context.Context, path string, lim Limits, left *int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &InputError{File: path, Err: fmt.Errorf("cannot open: %w", err)}
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return readUnmeasured(ctx, path, f, lim, left)
	}
	return nil, countDocuments(ctx, path, f, lim.Objects)
}

// parseFile parses a regular file, streamed.
func parseFile(ctx context.Context, path string, lim Limits) (*Manifests, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &InputError{File: path, Err: fmt.Errorf("cannot open: %w", err)}
	}
	defer f.Close()
	return readStream(ctx, path, f, lim)
}

// readUnmeasured reads an input whose size is not known before it is read
// (stdin, a pipe) into memory, up to what is left of the run's budget and
// the file cap, refusing it the moment it crosses either, before any of it
// is parsed, and counts its documents.
func readUnmeasured(ctx context.Context, name string, r io.Reader, lim Limits, left *int64) ([]byte, error) {
	limit := min(lim.FileSize, max(*left, 0))
	b, err := readBounded(ctx, r, limit)
	switch {
	case errors.Is(err, errInputTooLarge) && limit < lim.FileSize:
		return nil, &InputError{File: name, Err: fmt.Errorf("more than the %s left of the %s one run reads (the other inputs hold %s): check fewer files at a time",
			mib(limit), mib(lim.InputSize), mib(lim.InputSize-limit))}
	case errors.Is(err, errInputTooLarge):
		return nil, &InputError{File: name, Err: fmt.Errorf("larger than %s; is this a manifest?", mib(lim.FileSize))}
	case ctx.Err() != nil:
		return nil, interrupted(name, ctx.Err())
	case err != nil:
		return nil, &InputError{File: name, Err: fmt.Errorf("read failed: %w", err)}
	}
	*left -= int64(len(b))
	if b == nil {
		b = []byte{} // read, and empty
	}
	return b, countDocuments(ctx, name, bytes.NewReader(b), lim.Objects)
}

// readBounded reads r whole into memory, or stops with errInputTooLarge as
// soon as it holds more than limit bytes, or with ctx's error once ctx is
// done; a Read blocked on a pipe is then left to return on its own (its
// goroutine ends with it).
func readBounded(ctx context.Context, r io.Reader, limit int64) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		var buf []byte
		chunk := make([]byte, 64<<10)
		for {
			if ctx.Err() != nil {
				done <- result{err: ctx.Err()}
				return
			}
			n, err := r.Read(chunk)
			if int64(len(buf)+n) > limit {
				done <- result{err: errInputTooLarge}
				return
			}
			if len(buf)+n > cap(buf) {
				// Doubling, but never past what the limit lets it hold.
				grown := make([]byte, len(buf), min(max(2*cap(buf), len(buf)+n), int(limit)))
				copy(grown, buf)
				buf = grown
			}
			buf = append(buf, chunk[:n]...)
			if errors.Is(err, io.EOF) {
				done <- result{b: buf}
				return
			}
			if err != nil {
				done <- result{err: err}
				return
			}
		}
	}()
	select {
	case res := <-done:
		return res.b, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Read parses a YAML (or JSON) stream with any number of documents. name is
// used in sources and errors. Documents are decoded one at a time as they
// are read: only the objects the rules read (Services, workloads, PDBs,
// HPAs, routes) are kept with their YAML trees, so memory follows those,
// not the size of the input (ConfigMaps, Secrets and CRDs pass through).
func Read(name string, r io.Reader) (*Manifests, error) {
	return readStream(context.Background(), name, r, DefaultLimits())
}

// readStream is Read within lim, stopping once ctx is done.
func readStream(ctx context.Context, name string, r io.Reader, lim Limits) (*Manifests, error) {
	in := &inputReader{ctx: ctx, r: r, limit: lim.FileSize, line: 1}
	m, err := parse(name, in, lim.Objects)
	if in.tooLarge {
		return nil, &InputError{File: name, Err: fmt.Errorf("larger than %s; is this a manifest?", mib(lim.FileSize))}
	}
	if err != nil && ctx.Err() != nil {
		return nil, interrupted(name, ctx.Err())
	}
	if in.err != nil {
		return nil, &InputError{File: name, Err: fmt.Errorf("read failed: %w", in.err)}
	}
	return m, err
}

// countDocuments refuses an input of more than limit documents as soon as
// it has seen one more, before any is decoded: each document is a line
// scan, where decoding one costs its tree. It counts a lower bound of what
// parse counts (addObject's budget): a document is counted at its first
// line that holds something other than a comment, a directive or a null
// (~, null, !!null, with an anchor or tag before it), so an empty or null
// document, which parse skips, never counts, and List items and aliases are
// left to parse. A line of "---" or "..." at the start of a line always
// ends a document (YAML 1.2, c-forbidden: no scalar may hold one), so the
// scan needs no parser.
func countDocuments(ctx context.Context, name string, r io.Reader, limit int) error {
	br := bufio.NewReaderSize(r, 64<<10)
	n, line := 0, 0
	open := false // the current document has been counted
	for {
		frag, err := br.ReadSlice('\n')
		if line == 0 {
			frag = bytes.TrimPrefix(frag, []byte("\xef\xbb\xbf")) // a byte order mark
		}
		if len(frag) > 0 {
			line++
			if line%4096 == 0 && ctx.Err() != nil {
				return interrupted(name, ctx.Err())
			}
			rest := frag
			switch {
			case docMarker(frag, '-'):
				open, rest = false, frag[3:]
			case docMarker(frag, '.'):
				open, rest = false, nil
			case frag[0] == '%':
				rest = nil // a directive, before a "---"
			}
			if !open && holdsValue(rest) {
				open = true
				if n++; n > limit {
					return &InputError{File: name, Line: line, Err: fmt.Errorf("more than %d objects (documents and List items, counting YAML aliases); split the input", limit)}
				}
			}
			// The rest of a line longer than the buffer holds nothing that
			// starts a document.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return &InputError{File: name, Err: fmt.Errorf("read failed: %w", err)}
		}
	}
}

// docMarker reports whether line starts with "---" (c is '-') or "..."
// (c is '.') followed by a space or its end.
func docMarker(line []byte, c byte) bool {
	if len(line) < 3 || line[0] != c || line[1] != c || line[2] != c {
		return false
	}
	return len(line) == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r' || line[3] == '\n'
}

// holdsValue reports whether a line (or what follows a "---") holds
// something other than blanks, a comment or a null scalar with optional
// anchors and tags before it.
func holdsValue(b []byte) bool {
	f := bytes.Fields(b)
	for len(f) > 0 && (f[0][0] == '&' || f[0][0] == '!') {
		if bytes.Equal(f[0], []byte("!!null")) || bytes.HasSuffix(f[0], []byte(":null>")) {
			return false // whatever follows, the document is a null
		}
		f = f[1:] // an anchor or a tag
	}
	if len(f) == 0 || f[0][0] == '#' {
		return false
	}
	if len(f) > 1 && f[1][0] != '#' {
		return true
	}
	switch string(f[0]) {
	case "~", "null", "Null", "NULL":
		return false
	}
	return true
}

// inputReader counts what the YAML decoder reads: it stops at limit bytes
// and remembers the last line with text, where an error at the end of the
// stream (an unclosed bracket) is reported.
type inputReader struct {
	ctx         context.Context
	r           io.Reader
	limit, n    int64
	tooLarge    bool
	err         error
	line        int // the line the next byte is on
	lastContent int // the last line with text seen so far
}

func (in *inputReader) Read(p []byte) (int, error) {
	if err := in.ctx.Err(); err != nil {
		return 0, err
	}
	if in.n >= in.limit+1 {
		in.tooLarge = true
		return 0, errInputTooLarge
	}
	if rest := in.limit + 1 - in.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := in.r.Read(p)
	in.n += int64(n)
	for _, b := range p[:n] {
		switch b {
		case '\n':
			in.line++
		case ' ', '\t', '\r':
		default:
			in.lastContent = in.line
		}
	}
	if in.n > in.limit {
		in.tooLarge = true
		return n, errInputTooLarge
	}
	if err != nil && !errors.Is(err, io.EOF) {
		in.err = err
	}
	return n, err
}

var errInputTooLarge = errors.New("input too large")

func parse(name string, in *inputReader, maxObjects int) (*Manifests, error) {
	m := &Manifests{}
	dec := yaml.NewDecoder(in)
	lastLine := 1
	budget := maxObjects
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return m, nil
		}
		if err != nil {
			if in.tooLarge || in.err != nil || in.ctx.Err() != nil {
				return nil, err // readStream reports it
			}
			ie := yamlError(name, lastLine, err)
			// An error at the end of the stream (an unclosed bracket) is
			// reported past the last line; point at the last line with text.
			ie.Line = min(ie.Line, max(in.lastContent, 1))
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
		if err := addObject(m, name, root, 0, &budget, maxObjects); err != nil {
			return nil, err
		}
	}
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

func addObject(m *Manifests, file string, n *yaml.Node, depth int, budget *int, maxObjects int) error {
	src := Source{File: file, Line: n.Line}
	if *budget--; *budget < 0 {
		return &InputError{File: file, Line: n.Line, Err: fmt.Errorf("more than %d objects (documents and List items, counting YAML aliases); split the input", maxObjects)}
	}
	if n.Kind != yaml.MappingNode {
		m.Skipped = append(m.Skipped, Skip{Source: src, Reason: "not a Kubernetes object (the document is not a mapping)"})
		return nil
	}
	if depth == 0 {
		for _, d := range dropDuplicateKeys(n, 0) {
			m.Warnings = append(m.Warnings, Skip{Source: Source{File: file, Line: d.line},
				Reason: fmt.Sprintf("key %q is defined again at line %d; the last value is read, as kubectl apply -f applies it", d.key, d.again)})
		}
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
			if err := addObject(m, file, resolveAlias(it), depth+1, budget, maxObjects); err != nil {
				return err
			}
		}
		return nil
	}
	obj := &Object{
		APIVersion: h.APIVersion, Kind: h.Kind, Name: h.Metadata.Name, Namespace: h.Metadata.Namespace,
		Source: src,
	}
	if !analysed(obj) {
		// Neither converted nor kept: the tree goes with this document.
		m.Skipped = append(m.Skipped, Skip{Source: src, Reason: fmt.Sprintf("%s %s is not analysed", h.APIVersion, h.Kind)})
		if v := referencedTarget(obj); v != nil {
			raw, err := nodeJSON(n)
			if err == nil && json.Unmarshal(raw, v) == nil {
				obj.Obj = v
				m.Referenced = append(m.Referenced, obj)
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
	tree := lineTree(n, n.Line)
	obj.lines = &tree
	if err := decodeTyped(obj, raw); err != nil {
		return &InputError{File: file, Line: typeErrorLine(obj, err), Err: fmt.Errorf("%s %q: %w", h.Kind, h.Metadata.Name, err)}
	}
	m.Objects = append(m.Objects, obj)
	return nil
}

type duplicate struct {
	key         string
	line, again int
}

// dropDuplicateKeys keeps the last of every key a mapping defines twice
// and says which: kubectl and the API server read a manifest with
// sigs.k8s.io/yaml, which converts YAML to JSON keeping the last value,
// and a stricter reader would refuse manifests the cluster applies. Aliases
// are not followed (their anchors are walked where they stand); depth
// bounds the walk like the decoder's.
func dropDuplicateKeys(n *yaml.Node, depth int) []duplicate {
	if n == nil || depth > 10000 {
		return nil
	}
	var out []duplicate
	if n.Kind == yaml.MappingNode {
		last := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Tag != "!!merge" {
				last[k.Value] = i
			}
		}
		kept := n.Content[:0:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if j, ok := last[k.Value]; ok && k.Kind == yaml.ScalarNode && k.Tag != "!!merge" && j != i {
				out = append(out, duplicate{key: k.Value, line: k.Line, again: n.Content[j].Line})
				// Its value goes, but an anchor in it may still be named
				// by an alias the decoder follows.
				if v := n.Content[i+1]; v.Kind != yaml.AliasNode {
					out = append(out, dropDuplicateKeys(v, depth+1)...)
				}
				continue
			}
			kept = append(kept, k, n.Content[i+1])
		}
		if len(kept) != len(n.Content) {
			n.Content = kept
		}
	}
	for _, c := range n.Content {
		if c.Kind != yaml.AliasNode {
			out = append(out, dropDuplicateKeys(c, depth+1)...)
		}
	}
	return out
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
	var pe *placeholderError
	if errors.As(err, &pe) {
		return o.Line(pe.path...)
	}
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

// decodeTyped fills obj.Obj (and a route's obj.routes) for the kinds the doctor reads
// (typedTarget); other kinds are left alone.
func decodeTyped(obj *Object, raw []byte) error {
	v, routes, ok := typedTarget(obj)
	if !ok {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return err
	}
	if err := placeholders(v); err != nil {
		return err
	}
	// A route keeps its decoded object too: its annotations say how its
	// LB reaches the Pods (routeHint).
	obj.Obj = v
	if routes != nil {
		obj.routes = routes()
	}
	if rt, ok := v.(*gatewayRoute); ok {
		obj.parents = rt.parents()
	}
	return nil
}

// referencedTarget is what obj decodes into when it is a kind a Pod
// template names (volumes, env, its service account), else nil.
func referencedTarget(obj *Object) any {
	if obj.APIVersion != "v1" {
		return nil
	}
	switch obj.Kind {
	case "ConfigMap":
		return &corev1.ConfigMap{}
	case "Secret":
		return &corev1.Secret{}
	case "ServiceAccount":
		return &corev1.ServiceAccount{}
	}
	return nil
}

// analysed reports whether the rules read obj's kind.
func analysed(obj *Object) bool {
	_, _, ok := typedTarget(obj)
	return ok
}

// typedTarget is the one table of analysed kinds: what obj decodes into,
// and for a route kind the Services it sends to once decoded. Older API
// versions are decoded into the current types: the fields the rules read
// have not changed shape.
func typedTarget(obj *Object) (v any, routes func() []string, ok bool) {
	group := obj.APIVersion
	if i := strings.LastIndex(group, "/"); i >= 0 {
		group = group[:i]
	} else {
		group = ""
	}
	switch {
	case obj.Kind == "Service" && group == "":
		v = &corev1.Service{}
	case obj.Kind == "Deployment" && (group == "apps" || group == "extensions"):
		v = &appsv1.Deployment{}
	case obj.Kind == "StatefulSet" && group == "apps":
		v = &appsv1.StatefulSet{}
	case obj.Kind == "DaemonSet" && (group == "apps" || group == "extensions"):
		v = &appsv1.DaemonSet{}
	case obj.Kind == "Namespace" && group == "":
		// Its labels: a namespace may ask a vendor to inject its pod
		// readiness gate (profiles.ReadinessGate.NamespaceLabel).
		v = &corev1.Namespace{}
	case obj.Kind == "PodDisruptionBudget" && group == "policy":
		v = &policyv1.PodDisruptionBudget{}
	case obj.Kind == "ReplicationController" && group == "":
		v = &corev1.ReplicationController{}
	case obj.Kind == "Rollout" && group == "argoproj.io":
		v = &argoRollout{}
	case obj.Kind == "HorizontalPodAutoscaler" && group == "autoscaling":
		// v1, v2beta1, v2beta2 and v2 share scaleTargetRef, minReplicas and
		// maxReplicas, the fields the doctor reads.
		v = &autoscalingv2.HorizontalPodAutoscaler{}
	case obj.Kind == "Ingress" && group == "networking.k8s.io" && obj.APIVersion == "networking.k8s.io/v1":
		ing := &networkingv1.Ingress{}
		v, routes = ing, func() []string { return ingressServices(ing) }
	case obj.Kind == "Ingress" && (group == "extensions" || group == "networking.k8s.io"):
		// extensions/v1beta1 and networking.k8s.io/v1beta1 share this shape
		// (serviceName/servicePort), the Ingress of incident keepalive-unready.
		ing := &extv1beta1.Ingress{}
		v, routes = ing, func() []string { return legacyIngressServices(ing) }
	case obj.Kind == profiles.BackendConfigKind && group == profiles.BackendConfigGroup:
		// GKE's BackendConfig: the health check a Service may choose
		// (backendconfig.go); decoded whole, so a fix writes it back whole.
		v = &unstructured.Unstructured{}
	case isRouteKind(obj.Kind) && group == gatewayGroup:
		// A closure, as for the Ingresses: the route's backends are read
		// once it is decoded, not from the empty route it decodes into.
		// HTTPRoute, GRPCRoute, TCPRoute, TLSRoute and UDPRoute name their
		// backends alike (kubernetes-sigs/gateway-api apis/v1 and
		// apis/v1alpha2 *route_types.go: each rule's BackendRefs
		// []BackendRef), in every version from v1alpha2 on.
		rt := &gatewayRoute{}
		v, routes = rt, func() []string { return rt.services() }
	case obj.Kind == "Gateway" && group == gatewayGroup:
		// Its class: the LB or data plane that carries its routes
		// (gatewayPaths).
		v = &gatewayObject{}
	case obj.Kind == "GatewayClass" && group == gatewayGroup:
		v = &gatewayClassObject{}
	default:
		return nil, nil, false
	}
	return v, routes, true
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
		ParentRefs []gatewayRef `json:"parentRefs"`
		Rules      []struct {
			BackendRefs []gatewayRef `json:"backendRefs"`
		} `json:"rules"`
	} `json:"spec"`
}

// gatewayRef is the part of a route's parentRefs and backendRefs entries
// the doctor reads: both name an object by group, kind, name and namespace
// (Gateway API apis/v1 ParentReference and BackendObjectReference).
type gatewayRef struct {
	Group     *string `json:"group"`
	Kind      *string `json:"kind"`
	Name      string  `json:"name"`
	Namespace *string `json:"namespace"`
}

// services are the Services the route sends to: a bare name for a
// backendRef without a namespace (one in the route's own, which may only
// be known once the input's default namespace is applied), else
// "namespace/name" (Gateway API v1 BackendObjectReference; one in another
// namespace is allowed by a ReferenceGrant there, which the doctor takes
// as given).
func (r gatewayRoute) services() []string {
	out := []string{}
	for _, rule := range r.Spec.Rules {
		for _, b := range rule.BackendRefs {
			if (b.Kind == nil || *b.Kind == "Service") && (b.Group == nil || *b.Group == "") && b.Name != "" {
				if b.Namespace != nil && *b.Namespace != "" {
					out = append(out, *b.Namespace+"/"+b.Name)
				} else {
					out = append(out, b.Name)
				}
			}
		}
	}
	return out
}

// parents are the route's parentRefs with the Gateway API's defaults
// (kubernetes-sigs/gateway-api apis/v1/shared_types.go ParentReference:
// group gateway.networking.k8s.io, kind Gateway, the route's namespace).
func (r gatewayRoute) parents() []parentRef {
	var out []parentRef
	for _, p := range r.Spec.ParentRefs {
		ref := parentRef{group: gatewayGroup, kind: "Gateway", name: p.Name}
		if p.Group != nil {
			ref.group = *p.Group
		}
		if p.Kind != nil {
			ref.kind = *p.Kind
		}
		if p.Namespace != nil {
			ref.namespace = *p.Namespace
		}
		if ref.name != "" {
			out = append(out, ref)
		}
	}
	return out
}

// gatewayObject is the part of a Gateway the doctor reads: its class.
type gatewayObject struct {
	Spec struct {
		GatewayClassName string `json:"gatewayClassName"`
	} `json:"spec"`
}

// gatewayClassObject is the part of a GatewayClass the doctor reads: the
// controller that implements it.
type gatewayClassObject struct {
	Spec struct {
		ControllerName string `json:"controllerName"`
	} `json:"spec"`
}
