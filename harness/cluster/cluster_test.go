package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"math/big"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/router"
	"zerodrop.dev/zerodrop/internal/waitfor"
)

func TestNewUnknownProvider(t *testing.T) {
	for _, name := range []string{"", "gke", "KIND"} {
		p, err := New(name)
		if err == nil || p != nil {
			t.Fatalf("New(%q) = %v, %v; want error", name, p, err)
		}
		if !strings.Contains(err.Error(), "existing, kind") {
			t.Errorf("error %q does not list the known providers", err)
		}
	}
	if p, err := New("kind", WithName("x")); err != nil || p.Name() != "kind" {
		t.Fatalf("New(kind) = %v, %v", p, err)
	}
}

func TestKindConfig(t *testing.T) {
	o := buildOptions([]Option{WithNodeImage("img:1")})
	cfg, err := kindConfig(o)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Networking.DisableDefaultCNI || cfg.Networking.KubeProxyMode != v1alpha4.IPTablesProxyMode {
		t.Errorf("networking = %+v", cfg.Networking)
	}
	if len(cfg.Nodes) != 4 {
		t.Fatalf("%d nodes, want 1 control plane + 3 workers", len(cfg.Nodes))
	}
	pools := map[string]int{}
	for i, n := range cfg.Nodes {
		if n.Image != "img:1" {
			t.Errorf("node %d image %q", i, n.Image)
		}
		if i == 0 {
			if n.Role != v1alpha4.ControlPlaneRole || n.Labels[contract.PoolLabel] != "" {
				t.Errorf("node 0 = %+v, want unpooled control plane", n)
			}
			continue
		}
		if n.Role != v1alpha4.WorkerRole {
			t.Errorf("node %d role %s", i, n.Role)
		}
		pools[n.Labels[contract.PoolLabel]]++
	}
	if pools["pool-a"] != 2 || pools["pool-b"] != 1 {
		t.Errorf("pools = %v, want pool-a:2 pool-b:1", pools)
	}
	if !strings.Contains(strings.Join(cfg.KubeadmConfigPatches, ""), "maxPerCore: 0") {
		t.Error("conntrack maxPerCore patch missing")
	}
	// The patch must be valid YAML for kind to merge it.
	var m map[string]any
	if err := yaml.Unmarshal([]byte(cfg.KubeadmConfigPatches[0]), &m); err != nil {
		t.Fatal(err)
	}

	taint := corev1.Taint{Key: "dedicated", Value: "lb", Effect: corev1.TaintEffectNoSchedule}
	o = buildOptions([]Option{WithPools(Pool{Name: "edge", Count: 1, Labels: map[string]string{"tier": "edge", contract.PoolLabel: "spoofed"}, Taints: []corev1.Taint{taint}})})
	cfg, err = kindConfig(o)
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.Nodes[1]
	if w.Labels[contract.PoolLabel] != "edge" || w.Labels["tier"] != "edge" {
		t.Errorf("labels = %v", w.Labels)
	}
	if len(w.KubeadmConfigPatches) != 1 || !strings.Contains(w.KubeadmConfigPatches[0], `key: "dedicated"`) {
		t.Errorf("taint patch = %v", w.KubeadmConfigPatches)
	}
	if err := yaml.Unmarshal([]byte(w.KubeadmConfigPatches[0]), &m); err != nil {
		t.Fatalf("taint patch is not YAML: %v", err)
	}

	for _, bad := range [][]Pool{
		{{Name: "Pool_A", Count: 1}},
		{{Name: "a", Count: 0}},
		{{Name: "a", Count: 1}, {Name: "a", Count: 1}},
		{{Name: "-a", Count: 1}},
	} {
		if _, err := kindConfig(buildOptions([]Option{WithPools(bad...)})); err == nil {
			t.Errorf("pools %+v accepted", bad)
		}
	}
}

func TestLBRange(t *testing.T) {
	tests := []struct {
		subnet      string
		count       int
		block       int
		first, last string
		wantErr     bool
	}{
		{"172.18.0.0/16", 32, 0, "172.18.255.222", "172.18.255.253", false},
		{"172.18.0.0/16", 32, 2, "172.18.255.158", "172.18.255.189", false},
		{"172.19.0.0/24", 8, 0, "172.19.0.246", "172.19.0.253", false},
		{"172.19.0.0/24", 32, 17, "172.19.0.222", "172.19.0.253", false}, // too small to move: top block
		{"172.18.3.4/16", 1, 0, "172.18.255.253", "172.18.255.253", false},
		{"10.0.0.0/30", 1, 0, "", "", true},
		{"172.19.0.0/24", 65, 0, "", "", true},
		{"172.19.0.0/24", 0, 0, "", "", true},
		{"fc00::/64", 4, 0, "", "", true},
	}
	for _, tt := range tests {
		first, last, err := lbRange(netip.MustParsePrefix(tt.subnet), tt.count, tt.block)
		if (err != nil) != tt.wantErr {
			t.Fatalf("lbRange(%s, %d) err = %v", tt.subnet, tt.count, err)
		}
		if err == nil && (first.String() != tt.first || last.String() != tt.last) {
			t.Errorf("lbRange(%s, %d) = %s-%s, want %s-%s", tt.subnet, tt.count, first, last, tt.first, tt.last)
		}
	}
}

func TestLBBlock(t *testing.T) {
	if lbBlock("zerodrop") != 0 {
		t.Error("the default cluster must keep the top block")
	}
	for _, n := range []string{"zde2e", "zdlead", "zdsub", "x"} {
		if b := lbBlock(n); b < 2 || b > 17 || b != lbBlock(n) {
			t.Errorf("lbBlock(%q) = %d, want a stable 2..17", n, b)
		}
	}
}

func TestParseNetworkInspect(t *testing.T) {
	in := `[{"Name":"kind","IPAM":{"Config":[{"Subnet":"fc00:f853:ccd:e793::/64"},{"Subnet":"172.18.0.0/16","Gateway":"172.18.0.1"}]},"Labels":{}}]`
	ni, err := parseNetworkInspect([]byte(in))
	if err != nil || ni.IPv4.String() != "172.18.0.0/16" {
		t.Fatalf("got %+v, %v", ni, err)
	}
	for _, bad := range []string{`[]`, `{`, `[{"Name":"x","IPAM":{"Config":[{"Subnet":"fc00::/64"}]}}]`} {
		if _, err := parseNetworkInspect([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestManifests(t *testing.T) {
	fl, err := flannelManifest("10.244.0.0/16")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"Network": "10.244.0.0/16"`, `"Type": "host-gw"`, FlannelImage, "--kube-subnet-mgr", "10-flannel.conflist"} {
		if !strings.Contains(fl, want) {
			t.Errorf("flannel manifest lacks %q", want)
		}
	}
	for i, doc := range strings.Split(fl, "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil || m["kind"] == nil {
			t.Errorf("flannel doc %d is not a Kubernetes object: %v", i, err)
		}
	}
	if _, err := flannelManifest("nonsense"); err == nil {
		t.Error("bad pod subnet accepted")
	}
	pool, err := metallbPoolManifest(netip.MustParseAddr("172.18.255.222"), netip.MustParseAddr("172.18.255.253"))
	if err != nil || !strings.Contains(pool, "172.18.255.222-172.18.255.253") {
		t.Fatalf("pool manifest %q, %v", pool, err)
	}
}

// kube-vip keeps an ARP period of whole milliseconds from 500 ms up
// (pkg/arp/arp.go replaces a shorter one with 3000 ms).
func TestValidKubeVIPARPRate(t *testing.T) {
	for _, tt := range []struct {
		d  time.Duration
		ok bool
	}{{3 * time.Second, true}, {500 * time.Millisecond, true}, {499 * time.Millisecond, false}, {0, false}, {1500500 * time.Microsecond, false}} {
		if err := ValidKubeVIPARPRate(tt.d); (err == nil) != tt.ok {
			t.Errorf("ValidKubeVIPARPRate(%s) = %v, want ok %t", tt.d, err, tt.ok)
		}
	}
}

func TestKubeVIPManifest(t *testing.T) {
	if fast, err := kubeVIPManifest("172.18.254.222", "172.18.254.253", 500*time.Millisecond); err != nil || !strings.Contains(fast, `vip_arpRate, value: "500"`) {
		t.Errorf("kube-vip manifest with a 500 ms ARP period: %v\n%s", err, fast)
	}
	m, err := kubeVIPManifest("172.18.254.222", "172.18.254.253", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{KubeVIPImage, "range: 172.18.254.222-172.18.254.253", "lb_class_name, value: " + contract.KubeVIPClass, `vip_arpRate, value: "3000"`,
		"name: " + contract.KubeVIPConfigMap, "svc_election, value: \"true\"", "vip_arp, value: \"true\"", "node-role.kubernetes.io/control-plane, operator: DoesNotExist"} {
		if !strings.Contains(m, want) {
			t.Errorf("kube-vip manifest lacks %q", want)
		}
	}
	for i, doc := range strings.Split(m, "\n---\n") {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil || o["kind"] == nil {
			t.Errorf("kube-vip doc %d is not a Kubernetes object: %v", i, err)
		}
	}
	r := &router.Router{Container: "zd-router-kube-vip", IP: netip.MustParseAddr("172.18.0.9"), ASN: 64512, PeerASN: kubeVIPASN}
	b, err := kubeVIPBGPManifest(r, "198.18.1.1", "198.18.1.254")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bgp_peers, value: \"172.18.0.9:64512::false\"", "bgp_as, value: \"64514\"", "lb_class_name, value: " + contract.KubeVIPBGPClass,
		"range: 198.18.1.1-198.18.1.254", "vip_interface, value: lo", "svc_election, value: \"false\"", "prometheus_server, value: \":2113\"",
		"metadata: {name: " + contract.KubeVIPBGPDaemonSet + ", namespace: kube-system}",
		// The suites park it off a leaving machine (kubevip.Park).
		"{key: " + contract.KubeVIPBGPParkedLabel + ", operator: DoesNotExist}"} {
		if !strings.Contains(b, want) {
			t.Errorf("kube-vip BGP manifest lacks %q", want)
		}
	}
	for i, doc := range strings.Split(b, "\n---\n") {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil || o["kind"] == nil {
			t.Errorf("kube-vip BGP doc %d is not a Kubernetes object: %v", i, err)
		}
	}
	// kube-vip's block lies below every MetalLB and cloud LB block.
	for _, n := range []string{"zerodrop", "zde2e", "zdlead", "x"} {
		if b := kubeVIPBlock(n); b < 34 || b > 50 {
			t.Errorf("kubeVIPBlock(%q) = %d, want 34..50", n, b)
		}
	}
}

// TestImageVersionsAgree: the image names the harness deploys are the ones
// the offline build makes (clusters/images/versions.sh).
func TestImageVersionsAgree(t *testing.T) {
	raw, err := os.ReadFile("../../clusters/images/versions.sh")
	if err != nil {
		t.Fatal(err)
	}
	for v, img := range map[string]string{"KUBE_VIP_VERSION": KubeVIPImage, "FLANNEL_VERSION": FlannelImage} {
		m := regexp.MustCompile(v + `="\$\{` + v + `:-([^}]+)\}"`).FindSubmatch(raw)
		if m == nil {
			t.Errorf("versions.sh sets no default %s", v)
			continue
		}
		if !strings.HasSuffix(img, ":"+string(m[1])) {
			t.Errorf("%s is %s in versions.sh, but the harness deploys %s", v, m[1], img)
		}
	}
}

func selfSignedCA(t *testing.T) ([]byte, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), cert
}

func TestCACertHash(t *testing.T) {
	p, cert := selfSignedCA(t)
	got, err := caCertHash(p)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	if want := "sha256:" + hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("hash %s, want %s", got, want)
	}
	if _, err := caCertHash([]byte("not pem")); err == nil {
		t.Error("garbage accepted")
	}
}

func TestJoinConfig(t *testing.T) {
	j := joinConfig{Endpoint: "zd-control-plane:6443", Token: "abcdef.0123456789abcdef", CAHash: "sha256:00", NodeName: "zd-pool-c-1",
		NodeIP: "172.18.0.9", ProviderID: "kind://docker/zd/zd-pool-c-1", Labels: map[string]string{contract.PoolLabel: "pool-c", "a": "b"}}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(j.render()), &m); err != nil {
		t.Fatalf("join config is not YAML: %v\n%s", err, j.render())
	}
	reg := m["nodeRegistration"].(map[string]any)
	if reg["name"] != "zd-pool-c-1" || len(reg["taints"].([]any)) != 0 {
		t.Errorf("nodeRegistration = %v", reg)
	}
	args := reg["kubeletExtraArgs"].([]any)
	if got := args[2].(map[string]any)["value"]; got != "a=b,zerodrop.dev/pool=pool-c" {
		t.Errorf("node-labels = %v", got)
	}
	disc := m["discovery"].(map[string]any)["bootstrapToken"].(map[string]any)
	if disc["token"] != j.Token || disc["apiServerEndpoint"] != j.Endpoint {
		t.Errorf("discovery = %v", disc)
	}
	j.Taints = []corev1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectNoExecute}}
	if err := yaml.Unmarshal([]byte(j.render()), &m); err != nil {
		t.Fatal(err)
	}
	if got := m["nodeRegistration"].(map[string]any)["taints"].([]any); len(got) != 1 {
		t.Errorf("taints = %v", got)
	}
}

func TestNodeRunArgs(t *testing.T) {
	args := strings.Join(nodeRunArgs("zd", "pool-c", "zd-pool-c-1", "img:1"), " ")
	for _, want := range []string{"--privileged", "io.x-k8s.kind.cluster=zd", "io.x-k8s.kind.role=worker", "--net kind", "--volume /var", "--tmpfs /run", "--cgroupns=private"} {
		if !strings.Contains(args, want) {
			t.Errorf("run args lack %q: %s", want, args)
		}
	}
	if !strings.HasSuffix(args, " img:1") {
		t.Errorf("image must come last: %s", args)
	}
}

func TestSysctlRecordRestore(t *testing.T) {
	root := t.TempDir()
	fs := sysctlFS{root: root}
	set := func(name, v string) {
		p := fs.path(name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set("vm.overcommit_memory", "0")
	set("kernel.panic", "1")
	set("kernel.panic_on_oops", "0")
	before, err := fs.read(hostSysctls)
	if err != nil {
		t.Fatal(err)
	}
	// what kubelet does
	set("vm.overcommit_memory", "1")
	set("kernel.panic", "10")
	changed, err := fs.restore(before)
	if err != nil || len(changed) != 2 {
		t.Fatalf("restore changed %v, %v; want 2 changes", changed, err)
	}
	after, _ := fs.read(hostSysctls)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s = %s, want %s", k, after[k], v)
		}
	}
	if changed, _ := fs.restore(before); len(changed) != 0 {
		t.Errorf("second restore changed %v", changed)
	}
	if _, err := (sysctlFS{root: filepath.Join(root, "missing")}).read(hostSysctls); err == nil {
		t.Error("missing sysctl read without error")
	}
}

func TestStateRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if s, err := loadState(dir, "zd"); s != nil || err != nil {
		t.Fatalf("empty dir: %v, %v", s, err)
	}
	want := &hostState{Cluster: "zd", Network: "kind", NetworkCreated: true, Sysctls: map[string]string{"kernel.panic": "1"}}
	if err := saveState(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := loadState(dir, "zd")
	if err != nil || got.Sysctls["kernel.panic"] != "1" || !got.NetworkCreated {
		t.Fatalf("got %+v, %v", got, err)
	}
	if err := removeState(dir, "zd"); err != nil {
		t.Fatal(err)
	}
	if err := removeState(dir, "zd"); err != nil {
		t.Fatalf("second remove: %v", err)
	}
	if err := saveState(dir, &hostState{Cluster: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := saveState(dir, &hostState{Cluster: "b"}); err != nil {
		t.Fatal(err)
	}
	others, err := otherStates(dir, "a")
	if err != nil || len(others) != 1 || others[0].Cluster != "b" {
		t.Fatalf("otherStates = %+v, %v", others, err)
	}
	if err := os.WriteFile(statePath(dir, "bad"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadState(dir, "bad"); err == nil {
		t.Error("broken state accepted")
	}
}

// TestHandOverNetwork: a cluster that created the kind network but goes
// while another recorded cluster still uses it leaves the removal to it.
func TestHandOverNetwork(t *testing.T) {
	dir := t.TempDir()
	for _, s := range []*hostState{
		{Cluster: "first", Network: "kind", NetworkCreated: true},
		{Cluster: "other-net", Network: "elsewhere"},
		{Cluster: "second", Network: "kind"},
	} {
		if err := saveState(dir, s); err != nil {
			t.Fatal(err)
		}
	}
	others, err := otherStates(dir, "first")
	if err != nil {
		t.Fatal(err)
	}
	heir, err := handOverNetwork(dir, others, "kind")
	if err != nil || heir != "second" {
		t.Fatalf("heir = %q, %v; want second", heir, err)
	}
	if got, _ := loadState(dir, "second"); got == nil || !got.NetworkCreated {
		t.Errorf("second's state after the hand-over = %+v, want NetworkCreated", got)
	}
	if got, _ := loadState(dir, "other-net"); got == nil || got.NetworkCreated {
		t.Errorf("a cluster on another network was changed: %+v", got)
	}
	if heir, err := handOverNetwork(dir, others, "nobody-uses-this"); err != nil || heir != "" {
		t.Errorf("no recorded user: heir = %q, %v; want none", heir, err)
	}
}

func node(name, pool string, ready bool, cp bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	if pool != "" {
		n.Labels[contract.PoolLabel] = pool
	}
	if cp {
		n.Labels["node-role.kubernetes.io/control-plane"] = ""
	}
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "172.18.0.2"}}
	return n
}

func TestListAndWaitNodes(t *testing.T) {
	cs := fake.NewClientset(node("zd-worker", "pool-a", true, false), node("zd-control-plane", "", true, true), node("zd-worker2", "pool-b", false, false))
	ctx := context.Background()
	ns, err := listNodes(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	if len(ns) != 3 || ns[0].Role != "control-plane" || ns[1].Name != "zd-worker" || ns[1].Pool != "pool-a" || ns[2].Ready {
		t.Fatalf("nodes = %+v", ns)
	}
	if err := waitNodesReady(ctx, cs, time.Second, "zd-worker"); err != nil {
		t.Fatalf("ready node: %v", err)
	}
	err = waitNodesReady(ctx, cs, 100*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "zd-worker2") || !errors.Is(err, waitfor.ErrTimeout) {
		t.Fatalf("not-ready wait: %v", err)
	}
	names, err := poolNodes(ctx, cs, "pool-a")
	if err != nil || len(names) != 1 || names[0] != "zd-worker" {
		t.Fatalf("poolNodes = %v, %v", names, err)
	}
}

func TestDrainNodeEvents(t *testing.T) {
	n := node("zd-worker", "pool-a", true, false)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", APIVersion: "apps/v1", Controller: ptr(true)}}}, Spec: corev1.PodSpec{NodeName: "zd-worker"}}
	cs := fake.NewClientset(n, pod)
	// Discovery without the eviction subresource: drain falls back to deletes.
	cs.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod", Namespaced: true}}}}
	var got []string
	o := buildOptions([]Option{WithEventSink(zdv1.EventFunc(func(e zdv1.Event) error {
		got = append(got, e.Type+" "+e.Object)
		return nil
	})), WithDrainTimeout(5 * time.Second)})
	if err := drainNode(context.Background(), cs, &o, "zd-worker"); err != nil {
		t.Fatal(err)
	}
	want := []string{"cordon node/zd-worker", "drain-start node/zd-worker", "action pod/default/p", "drain-end node/zd-worker"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("events %v, want %v", got, want)
	}
	after, _ := cs.CoreV1().Nodes().Get(context.Background(), "zd-worker", metav1.GetOptions{})
	if !after.Spec.Unschedulable {
		t.Error("node not cordoned")
	}
}

func ptr[T any](v T) *T { return &v }

func TestExistingRefusesNodepools(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := New("existing", WithKubeconfig(kc))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := p.AddNodePool(ctx, "pool-c", 1, nil, nil); !errors.Is(err, ErrUnsupported) {
		t.Errorf("AddNodePool err = %v, want ErrUnsupported", err)
	}
	if err := p.RemoveNodePool(ctx, "pool-a"); !errors.Is(err, ErrUnsupported) {
		t.Errorf("RemoveNodePool err = %v, want ErrUnsupported", err)
	}
	if err := p.Delete(ctx); err != nil {
		t.Errorf("Delete must be a no-op: %v", err)
	}
	if _, err := New("existing", WithKubeconfig(filepath.Join(t.TempDir(), "none"))); err == nil {
		t.Error("missing kubeconfig accepted")
	}
}

func TestRememberImages(t *testing.T) {
	dir := t.TempDir()
	k := NewKind(WithName("zd"), WithStateDir(dir))
	if err := k.rememberImages([]string{"a:1"}); err != nil {
		t.Fatalf("no state yet must be a no-op: %v", err)
	}
	if err := saveState(dir, &hostState{Cluster: "zd"}); err != nil {
		t.Fatal(err)
	}
	for _, imgs := range [][]string{{"a:1"}, {"a:1", "b:2"}} {
		if err := k.rememberImages(imgs); err != nil {
			t.Fatal(err)
		}
	}
	got, err := k.rememberedImages()
	if err != nil || strings.Join(got, ",") != "a:1,b:2" {
		t.Fatalf("remembered %v, %v", got, err)
	}
}

// kube-proxy that keeps exiting as it starts ends the wait at once,
// naming the Pod, its log and the hint; one that runs steadily on every
// node ends it done, even if it failed once before (a Docker restart of a
// reused cluster); one that just started, or runs on some nodes only, does
// not yet.
func TestWaitKubeProxy(t *testing.T) {
	ctx := context.Background()
	node := func(name string) *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	long, recent := metav1.NewTime(time.Now().Add(-time.Minute)), metav1.NewTime(time.Now())
	proxy := func(name, on string, state corev1.ContainerState, restarts int32, lastExit int32) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", Labels: map[string]string{"k8s-app": "kube-proxy"}},
			Spec: corev1.PodSpec{NodeName: on}}
		cs := corev1.ContainerStatus{Name: "kube-proxy", RestartCount: restarts, State: state}
		if restarts > 0 {
			cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: lastExit}
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
		return p
	}
	running := func(since metav1.Time) corev1.ContainerState {
		return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: since}}
	}
	backOff := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	exited := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	noSpace := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerError",
		Message: "failed to create containerd container: write /x: no space left on device"}}
	for _, tc := range []struct {
		name     string
		objs     []runtime.Object
		wantErr  string        // "" done
		stuckFor time.Duration // 0: at once
	}{
		{"steady everywhere", []runtime.Object{node("a"), node("b"), proxy("p1", "a", running(long), 0, 0), proxy("p2", "b", running(long), 0, 0)}, "", 0},
		{"failed once, runs now", []runtime.Object{node("a"), proxy("p1", "a", running(long), 1, 255)}, "", 0},
		{"back-off", []runtime.Object{node("a"), proxy("p1", "a", backOff, 3, 1)}, "kube-proxy p1 on node a keeps exiting as it starts", 0},
		{"exited again", []runtime.Object{node("a"), proxy("p1", "a", exited, 1, 1)}, "keeps exiting as it starts", 0},
		{"just started", []runtime.Object{node("a"), proxy("p1", "a", running(recent), 0, 0)}, "0 of 1 nodes run kube-proxy (not yet: a)", 0},
		{"two on one node, none on the other", []runtime.Object{node("a"), node("b"), proxy("p1", "a", running(long), 0, 0), proxy("p2", "a", running(long), 0, 0)}, "1 of 2 nodes run kube-proxy (not yet: b)", 0},
		{"none", []runtime.Object{node("a")}, "0 of 1 nodes run kube-proxy", 0},
		{name: "cannot create its container", objs: []runtime.Object{node("a"), proxy("p1", "a", noSpace, 0, 0)}, stuckFor: time.Hour,
			wantErr: "0 of 1 nodes run kube-proxy (not yet: a); p1 on a: CreateContainerError: failed to create containerd container: write /x: no space left on device"},
		{name: "cannot create its container for long", objs: []runtime.Object{node("a"), proxy("p1", "a", noSpace, 0, 0)},
			wantErr: "kube-proxy p1 on node a cannot start its container (for 0s): CreateContainerError: failed to create containerd container: write /x: no space left on device; `kubectl -n kube-system describe pod p1`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			err := waitKubeProxy(ctx, fake.NewClientset(tc.objs...), time.Second, tc.stuckFor, "; it was given feature gates Foo=false")
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("want done, got %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("want an error with %q, got %v", tc.wantErr, err)
			case strings.Contains(tc.wantErr, "exiting") && (!strings.Contains(err.Error(), "Foo=false") || !strings.Contains(err.Error(), "logs --previous p1")):
				t.Errorf("a crash-looping kube-proxy's error names neither the gates nor where its log is: %v", err)
			case strings.Contains(tc.wantErr, "exiting") && time.Since(start) > 2*time.Second:
				t.Errorf("a crash-looping kube-proxy took %s: it should end the wait at once", time.Since(start))
			}
		})
	}
}

// MetalLB v0.15.2's BGPPeer declares its AS numbers int32 with a 4-byte
// maximum; the patch widens exactly those.
func TestASNFormatPatch(t *testing.T) {
	crd := `{"spec":{"versions":[{"schema":{"openAPIV3Schema":{"properties":{"spec":{"properties":{
		"myASN":{"type":"integer","format":"int32","maximum":4294967295},
		"peerASN":{"type":"integer","format":"int32","maximum":4294967295},
		"peerPort":{"type":"integer","maximum":16384},
		"holdTime":{"type":"string"}}}}}}},
		{"schema":{"openAPIV3Schema":{"properties":{"spec":{"properties":{"myASN":{"type":"integer","format":"int64","maximum":4294967295}}}}}}}]}}`
	got, err := asnFormatPatch([]byte(crd))
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"op":"replace","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/myASN/format","value":"int64"},` +
		`{"op":"replace","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/peerASN/format","value":"int64"}]`
	if got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	if got, err := asnFormatPatch([]byte(`{"spec":{"versions":[]}}`)); err != nil || got != "" {
		t.Errorf("nothing to fix: %q %v", got, err)
	}
	if _, err := asnFormatPatch([]byte(`{`)); err == nil {
		t.Error("garbage read as a CRD")
	}
}

func TestHostRange(t *testing.T) {
	for _, tc := range []struct{ prefix, first, last string }{
		{"198.18.1.0/24", "198.18.1.1", "198.18.1.254"},
		{"198.18.1.7/24", "198.18.1.1", "198.18.1.254"},
		{"10.0.0.0/30", "10.0.0.1", "10.0.0.2"},
	} {
		first, last := hostRange(netip.MustParsePrefix(tc.prefix))
		if first.String() != tc.first || last.String() != tc.last {
			t.Errorf("hostRange(%s) = %s-%s, want %s-%s", tc.prefix, first, last, tc.first, tc.last)
		}
	}
}
