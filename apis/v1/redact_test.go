package v1

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Secrets used by the redaction tests; they are fake but shaped like the real
// thing. Other packages' tests build their own.
const (
	testJWT        = "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEyMyJ9.eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50In0.c2lnbmF0dXJlLXNpZ25hdHVyZQ"
	testAWSKeyID   = "AKIAIOSFODNN7EXAMPLE"
	testAWSSecret  = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM=
    server: https://127.0.0.1:6443
users:
- name: admin
  user:
    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlF
`
)

func TestRedactString(t *testing.T) {
	tests := []struct {
		name, in string
		gone     []string // must not survive
		kept     []string // must survive
	}{
		{"bearer header", "GET /api failed: Authorization: Bearer sk-abcdef0123456789xyz", []string{"sk-abcdef0123456789xyz"}, []string{"GET /api failed"}},
		{"jwt anywhere", "token file said " + testJWT + " ok", []string{testJWT, "c2lnbmF0dXJl"}, []string{"token file said", " ok"}},
		{"aws key id and secret", "AWS_ACCESS_KEY_ID=" + testAWSKeyID + " AWS_SECRET_ACCESS_KEY=" + testAWSSecret, []string{testAWSKeyID, testAWSSecret}, []string{"AWS_ACCESS_KEY_ID="}},
		{"aws key id alone", "using key " + testAWSKeyID + ".", []string{testAWSKeyID}, []string{"using key"}},
		{"kubeconfig", "kubectl failed with config:\n" + testKubeconfig, []string{"LS0tLS1CRUdJTiBDRVJU", "client-key-data: LS0t"}, []string{Redacted}},
		{"kubeconfig field alone", "client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlF", []string{"LS0tLS1CRUdJTiBSU0E"}, []string{"client-key-data: " + Redacted}},
		{"pem", "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\nafter", []string{"MIIEpAIBAAKCAQEA"}, []string{"after"}},
		{"url password", "dial https://admin:hunter2@127.0.0.1:6443/api", []string{"hunter2", "admin:"}, []string{"127.0.0.1:6443/api"}},
		{"json password", `{"password":"hunter2","user":"bob"}`, []string{"hunter2"}, []string{`"user":"bob"`}},
		{"github token", "GITHUB_TOKEN ghp_0123456789abcdefghijABCDEFGHIJ012345", []string{"ghp_0123456789abcdefghij"}, nil},
		// Shapes a skeptical reader found left in the clear.
		{"token flag with a space", "ran: zerodrop load --token s3cr3tvalue9 --rate 10", []string{"s3cr3tvalue9"}, []string{"--rate 10", "--token"}},
		{"password flag with a space", "cmd -password hunter2x --user bob", []string{"hunter2x"}, []string{"--user bob"}},
		{"cookie header", "request had Cookie: session=abc123def456; theme=dark", []string{"abc123def456", "theme=dark"}, []string{"Cookie:"}},
		{"set-cookie header", "Set-Cookie: sid=zzz999yyy888; Path=/", []string{"zzz999yyy888"}, []string{"Set-Cookie:"}},
		{"api token header", "X-Api-Token: 7f3a9c2e11b04d5e", []string{"7f3a9c2e11b04d5e"}, []string{"X-Api-Token"}},
		{"azure sas signature", "GET https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&sig=AbCdEf0123%2Bxyz%3D&se=2026", []string{"AbCdEf0123%2Bxyz%3D"}, []string{"sv=2022-11-02", "se=2026"}},
		{"slack token", "webhook via xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp", []string{"xoxb-1234567890"}, []string{"webhook via"}},
		{"openai project key", "OPENAI said sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123", []string{"sk-proj-AbCdEf"}, []string{"OPENAI said"}},
		{"prose is left alone", "AKS basic pool drained; pod/ns/echo-1 terminating; node/kind-worker cordoned; 3 tokens of evidence", nil,
			[]string{"AKS basic pool drained; pod/ns/echo-1 terminating; node/kind-worker cordoned; 3 tokens of evidence"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := RedactString(tc.in)
			for _, g := range tc.gone {
				if strings.Contains(got, g) {
					t.Errorf("RedactString left %q in %q", g, got)
				}
			}
			for _, k := range tc.kept {
				if !strings.Contains(got, k) {
					t.Errorf("RedactString lost %q: %q", k, got)
				}
			}
		})
	}
}

func TestRedactValueBySecretKey(t *testing.T) {
	if got := RedactValue("apiToken", "plain-looking-value"); got != Redacted {
		t.Errorf("RedactValue(apiToken) = %q, want %q", got, Redacted)
	}
	if got := RedactValue("externalTrafficPolicy", "Local"); got != "Local" {
		t.Errorf("RedactValue(externalTrafficPolicy) = %q, want Local", got)
	}
}

func TestReportRedact(t *testing.T) {
	r := New(RunMeta{Provider: "kind", Host: "AWS_SECRET_ACCESS_KEY=" + testAWSSecret})
	r.Scenarios = append(r.Scenarios, Scenario{
		ScenarioSpec: ScenarioSpec{
			Name: "drain", Role: RoleAssertion,
			Description: "uses bearer " + testJWT,
			Labels:      map[string]string{"provider": "kind"},
			Config:      map[string]string{"kubeconfig": testKubeconfig, "preStopSleep": "5s", "cloudSecret": "x1"},
		},
		Load: LoadSettings{Targets: []string{"http://user:pass@127.0.0.1:8080/"}},
		Events: []Event{{Type: "note", Message: "Authorization: Bearer " + testJWT,
			Fields: map[string]string{"token": "abc", "node": "kind-worker"}}},
		FailureWindows: []FailureWindow{{NearestEvents: []WindowEvent{{Event: Event{Message: "key " + testAWSKeyID}}}}},
		Verdict:        Verdict{Status: Pass, Reasons: []Reason{{Check: "run", Status: Pass, Message: "password=hunter2"}}},
	})
	r.Redact()
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	out := string(data)
	for _, s := range []string{testAWSSecret, testJWT[:20], "LS0tLS1CRUdJTiBDRVJU", "user:pass", testAWSKeyID, "hunter2", `"abc"`, "x1"} {
		if strings.Contains(out, s) {
			t.Errorf("redacted report still holds %q:\n%s", s, out)
		}
	}
	for _, s := range []string{`"preStopSleep":"5s"`, `"node":"kind-worker"`, `"provider":"kind"`, "127.0.0.1:8080"} {
		if !strings.Contains(out, s) {
			t.Errorf("redaction removed %q:\n%s", s, out)
		}
	}
}

func TestWriteFileRedacts(t *testing.T) {
	r := New(RunMeta{Provider: "kind"})
	r.Scenarios = append(r.Scenarios, Scenario{
		ScenarioSpec: ScenarioSpec{Name: "s", Role: RoleAssertion, Config: map[string]string{"auth": "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123456789"}},
		Verdict:      Verdict{Status: Pass},
	})
	path := filepath.Join(t.TempDir(), "report.json")
	if err := r.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "abcdefghijklmnopqrstuvwxyz0123456789") {
		t.Errorf("report.json keeps the bearer token:\n%s", b)
	}
}
