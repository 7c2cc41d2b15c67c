package v1

import (
	"regexp"
	"strings"
)

// Redacted replaces a secret in reports.
const Redacted = "[REDACTED]"

// secretPatterns match credentials that can end up in event messages, error
// texts or config values (a kubectl error quoting a kubeconfig, an
// Authorization header in a URL error, cloud keys in an environment dump).
// Each keeps its first group (the key or scheme) and replaces the secret.
// hints are substrings (of the lower-cased text) at least one of which any
// match contains: a pattern whose hints are all absent is skipped, which
// keeps scrubbing a large HTML page cheap.
var secretPatterns = []struct {
	hints []string
	re    *regexp.Regexp
	repl  string
}{
	// PEM blocks: keys and certificates.
	{[]string{"-----begin "}, regexp.MustCompile(`-----BEGIN [A-Z0-9 ]+-----[\s\S]*?(?:-----END [A-Z0-9 ]+-----|$)`), Redacted},
	// HTTP authorization schemes.
	// "basic" alone is common prose ("AKS basic pool"), so only after a header.
	{[]string{"bearer"}, regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9\-._~+/]{8,}=*`), "${1}" + Redacted},
	{[]string{"authorization"}, regexp.MustCompile(`(?i)(authorization\s*[:=]\s*["']?(?:bearer|basic|digest|negotiate|token)?\s*)[A-Za-z0-9\-._~+/]{6,}=*`), "${1}" + Redacted},
	// JSON Web Tokens (service-account tokens) wherever they appear.
	{[]string{"eyj"}, regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), Redacted},
	// AWS access key ids.
	{[]string{"akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa"},
		regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b`), Redacted},
	// GitHub and GitLab tokens.
	{[]string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-"},
		regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,})`), Redacted},
	// Slack tokens (xoxb-, xoxp-, ...) and OpenAI keys (sk-, sk-proj-).
	{[]string{"xox"}, regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`), Redacted},
	{[]string{"sk-"}, regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`), Redacted},
	// Cookies, whole: every pair of the header is a session.
	{[]string{"cookie"}, regexp.MustCompile(`(?i)\b((?:set-)?cookie\s*:\s*)[^\r\n"'<>]+`), "${1}" + Redacted},
	// Signatures in query strings (Azure SAS sig=, AWS presigned
	// X-Amz-Signature=): the URL is a credential while it is valid.
	{[]string{"sig=", "signature="}, regexp.MustCompile(`(?i)([?&](?:sig|x-amz-signature|signature)=)[^&\s"'<>]+`), "${1}" + Redacted},
	// A secret-named flag followed by its value after a space
	// (--token X, -password X); "=" forms are the key/value rule's.
	{[]string{"token", "passw", "secret", "key"},
		regexp.MustCompile(`(?i)((?:^|\s)--?(?:token|password|passwd|secret|client-secret|api-key|access-key|auth-token|bearer-token)\s+)[^\s"'-][^\s"']*`), "${1}" + Redacted},
	// Credentials in URLs: scheme://user:password@host. Anchored on the
	// literal "://" so the scan is fast.
	{[]string{"@"}, regexp.MustCompile(`://[^/\s:@"'<>]+:[^/\s@"'<>]+@`), "://" + Redacted + "@"},
	// key: value and key=value where the key names a secret (kubeconfig
	// fields, environment variables, flags, JSON).
	{[]string{"token", "passw", "passwd", "secret", "key"},
		regexp.MustCompile(`(?i)((?:client-key-data|client-certificate-data|certificate-authority-data|` +
			`id-token|refresh-token|access[_-]?token|auth[_-]?token|token|password|passwd|secret|` +
			`client[_-]?secret|api[_-]?key|access[_-]?key(?:[_-]?id)?|secret[_-]?access[_-]?key|` +
			`session[_-]?token|aws_secret_access_key|aws_session_token|aws_access_key_id|` +
			`azure_client_secret|private[_-]?key)["']?\s*[:=]\s*["']?)[^\s"',;}&]+`), "${1}" + Redacted},
}

// secretKey matches config and field names whose value is a secret as a
// whole, whatever it looks like.
var secretKey = regexp.MustCompile(`(?i)(token|password|passwd|secret|credential|kubeconfig|api[_-]?key|access[_-]?key|private[_-]?key|authorization|cookie)`)

// RedactString removes credentials from s: bearer and basic tokens, JWTs,
// PEM blocks, cloud and forge keys, passwords in URLs, secret-named
// key/value pairs, and whole kubeconfigs.
func RedactString(s string) string {
	if s == "" {
		return s
	}
	if looksLikeKubeconfig(s) {
		return Redacted + " (kubeconfig)"
	}
	return ScrubText(s)
}

// ScrubText applies RedactString's patterns to a whole rendered document
// (Markdown, HTML, XML) without RedactString's whole-value rules, as a last
// pass after the values in it were redacted one by one.
func ScrubText(s string) string {
	lower := strings.ToLower(s)
	for _, p := range secretPatterns {
		if !containsAny(lower, p.hints) {
			continue
		}
		s = p.re.ReplaceAllString(s, p.repl)
		lower = strings.ToLower(s)
	}
	return s
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func looksLikeKubeconfig(s string) bool {
	return strings.Contains(s, "kind: Config") && (strings.Contains(s, "users:") || strings.Contains(s, "clusters:")) ||
		strings.Contains(s, `"kind":"Config"`) && strings.Contains(s, `"users"`)
}

// RedactValue redacts the value of a key/value pair: everything when the key
// names a secret, otherwise what RedactString finds.
func RedactValue(key, value string) string {
	if value != "" && secretKey.MatchString(key) {
		return Redacted
	}
	return RedactString(value)
}

func redactMap(m map[string]string) {
	for k, v := range m {
		m[k] = RedactValue(k, v)
	}
}

// RedactEvent removes credentials from an event's message and fields.
func RedactEvent(e *Event) {
	e.Object = RedactString(e.Object)
	e.Message = RedactString(e.Message)
	redactMap(e.Fields)
}

// Redact removes credentials from every free-form string in the report
// (descriptions, labels, config, load targets and host, event messages and
// fields, verdict messages, run metadata). Numbers, names of checks and
// statuses are left alone. Renderers call it on every report they read;
// writers of report.json may call it before WriteFile.
func (r *Report) Redact() {
	r.Run.Host = RedactString(r.Run.Host)
	r.Run.Provider = RedactString(r.Run.Provider)
	r.Run.LBImplementation = RedactString(r.Run.LBImplementation)
	r.Run.KubernetesVersion = RedactString(r.Run.KubernetesVersion)
	r.Run.ToolVersion = RedactString(r.Run.ToolVersion)
	for i := range r.Scenarios {
		sc := &r.Scenarios[i]
		sc.Name = RedactString(sc.Name)
		sc.Description = RedactString(sc.Description)
		redactMap(sc.Labels)
		redactMap(sc.Config)
		sc.Criteria.ExpectedClientIP = RedactString(sc.Criteria.ExpectedClientIP)
		sc.Criteria.ForbiddenClientIP = RedactString(sc.Criteria.ForbiddenClientIP)
		sc.Criteria.ForwardedClientIP = RedactString(sc.Criteria.ForwardedClientIP)
		// A proxy's X-Forwarded-For is whatever the proxy wrote.
		for j := range sc.Results.ForwardedFor {
			sc.Results.ForwardedFor[j].Name = RedactString(sc.Results.ForwardedFor[j].Name)
		}
		for j := range sc.Load.Targets {
			sc.Load.Targets[j] = RedactString(sc.Load.Targets[j])
		}
		sc.Load.Host = RedactString(sc.Load.Host)
		sc.RunFile = RedactString(sc.RunFile)
		for j := range sc.Events {
			RedactEvent(&sc.Events[j])
		}
		for j := range sc.FailureWindows {
			for k := range sc.FailureWindows[j].NearestEvents {
				RedactEvent(&sc.FailureWindows[j].NearestEvents[k].Event)
			}
		}
		for j := range sc.Verdict.Reasons {
			sc.Verdict.Reasons[j].Message = RedactString(sc.Verdict.Reasons[j].Message)
		}
		for j := range sc.Remeasured {
			m := &sc.Remeasured[j]
			m.RunFile = RedactString(m.RunFile)
			for k := range m.Verdict.Reasons {
				m.Verdict.Reasons[k].Message = RedactString(m.Verdict.Reasons[k].Message)
			}
		}
	}
}
