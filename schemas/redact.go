package schemas

import (
	"regexp"
	"strings"
	"unicode"
)

// RedactedValue replaces every value bomstream removes as a possible secret:
// the value of a flag no detection rule reads, a secret in free text, the
// literal value of an env var that is not on the allow-list. It is fixed, so
// that rotating a credential changes no input hash.
const RedactedValue = "REDACTED"

// Patterns of RedactText. They are compiled once and never modified.
var (
	// Credentials recognizable by their shape alone.
	tokenRE = regexp.MustCompile(`hf_[A-Za-z0-9]{20,}` +
		`|\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}` +
		`|\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}|\bglpat-[A-Za-z0-9_-]{20,}` +
		`|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b|\bxox[abprs]-[A-Za-z0-9-]{10,}|\bnvapi-[A-Za-z0-9_-]{20,}` +
		`|\bAIza[0-9A-Za-z_-]{35}|\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}` +
		`|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`)
	privateKeyRE = regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`)
	urlRE        = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>\x60]*`)
	schemeRE     = regexp.MustCompile(`(?i)\b(bearer|basic|digest|negotiate)([ \t]+)([A-Za-z0-9._~+/=:-]{4,})`)
	// A name (of a header, a JSON or YAML key, a variable or a flag)
	// followed by ":" or "=": the value is redacted when the name names a
	// secret.
	keyRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9_.-])(["']?)(-{0,2}[A-Za-z_][A-Za-z0-9_.-]*)(["']?)([ \t]*[:=][ \t]*)`)
	// A secret-named flag and its value after blanks: "--password hunter2".
	flagRE = regexp.MustCompile(`(?:^|[\s;|&(])(--?[A-Za-z][A-Za-z0-9_.-]*)([ \t]+)`)
)

// RedactText removes secrets from free text: an error message, a dead-letter
// reason, a shell script, an env value, a field. It replaces with
// RedactedValue
//
//   - tokens recognizable by their shape: Hugging Face (hf_...), OpenAI and
//     Anthropic (sk-...), GitHub, GitLab, Slack, NGC (nvapi-...), Google API
//     keys, AWS access key ids, Stripe keys, JWTs, PEM private keys;
//   - in URLs, the userinfo (scheme://user:password@ becomes
//     scheme://REDACTED@) and every query parameter except those naming a
//     revision (revision, rev, ref, version, tag, commit, branch, sha); a
//     fragment holding "=" is dropped;
//   - the credentials of Bearer, Basic, Digest and Negotiate authorization;
//   - the value after a secret-named header, key, variable or flag
//     ("X-Api-Key: ...", "Authorization: ...", "password: ...",
//     `"api_key": "..."`, HF_TOKEN=..., --password=... and --password ...).
//     A name is secret-named when one of its words (split at "-", "_", "."
//     and case changes) is token, secret, password, passwd, credential(s),
//     auth, authorization, oauth, cookie, apikey, or ends in one of token,
//     secret, password, passwd, apikey, credential(s), or two of them read
//     "api key", "access key" or "private key". Counting words keeps
//     --tokenizer and --max-num-batched-tokens, which are engine settings.
//
// Everything else is kept as it is. RedactText never fails, is idempotent
// (RedactText(RedactText(s)) == RedactText(s)), runs in time linear in len(s)
// and is safe for concurrent use. It is a last line of defence for text whose
// structure is unknown; structured values (arguments, env) are redacted by
// allow-lists before they get here.
func RedactText(s string) string {
	if s == "" {
		return s
	}
	if strings.Contains(s, "PRIVATE KEY") {
		s = privateKeyRE.ReplaceAllLiteralString(s, RedactedValue)
	}
	if maybeToken(s) {
		s = redactTokens(s)
	}
	if strings.Contains(s, "://") {
		s = urlRE.ReplaceAllStringFunc(s, RedactURL)
	}
	if strings.ContainsAny(s, " \t") {
		s = schemeRE.ReplaceAllStringFunc(s, func(m string) string {
			sub := schemeRE.FindStringSubmatch(m)
			if sub[3] == RedactedValue {
				return m
			}
			return sub[1] + sub[2] + RedactedValue
		})
	}
	if strings.ContainsAny(s, ":=") {
		s = redactKeys(s)
	}
	if strings.IndexByte(s, '-') >= 0 && strings.ContainsAny(s, " \t") {
		s = redactFlags(s)
	}
	return s
}

// redactTokens replaces every token tokenRE finds, each widened back to the
// start of the word it sits in. Only hf_ tokens can follow other word
// characters (the other shapes start at a word boundary), and without the
// widening "hf_000000000000" + RedactedValue would be a token again: a
// second pass would change the text, and so would the next call.
func redactTokens(s string) string {
	locs := tokenRE.FindAllStringIndex(s, -1)
	if locs == nil {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, l := range locs {
		start := l[0]
		for start > last && isWordByte(s[start-1]) {
			start--
		}
		b.WriteString(s[last:start])
		b.WriteString(RedactedValue)
		last = l[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// isWordByte reports whether c is a word character as regexp's \b sees it.
func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// maybeToken is a cheap filter: can tokenRE match at all?
func maybeToken(s string) bool {
	for _, p := range []string{"hf_", "sk-", "gh", "github_pat_", "glpat-", "AKIA", "ASIA", "xox", "nvapi-", "AIza", "k_live_", "k_test_", "eyJ"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// revisionParams are the URL query parameters that name a revision and are
// kept.
var revisionParams = map[string]bool{
	"revision": true, "rev": true, "ref": true, "version": true, "tag": true,
	"commit": true, "branch": true, "sha": true,
}

// RedactURL removes the secrets of one URL: its userinfo, every query
// parameter but those naming a revision, and a fragment holding "=". A
// string with no "://" is returned as it is.
func RedactURL(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return u
	}
	head, rest := u[:i+3], u[i+3:]
	// The authority ends at the first "/", "?" or "#".
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndexByte(rest[:end], '@'); at >= 0 {
		if rest[:at] != RedactedValue {
			rest = RedactedValue + rest[at:]
		}
	}
	var frag string
	if h := strings.IndexByte(rest, '#'); h >= 0 {
		rest, frag = rest[:h], rest[h:]
		if strings.IndexByte(frag, '=') >= 0 {
			frag = ""
		}
	}
	q := strings.IndexByte(rest, '?')
	if q < 0 {
		return head + rest + frag
	}
	path, query := rest[:q], rest[q+1:]
	var kept []string
	for _, kv := range strings.FieldsFunc(query, func(r rune) bool { return r == '&' || r == ';' }) {
		k, v, _ := strings.Cut(kv, "=")
		if revisionParams[strings.ToLower(k)] && v != "" && maybeTokenFree(v) {
			kept = append(kept, kv)
		}
	}
	if len(kept) == 0 {
		return head + path + frag
	}
	return head + path + "?" + strings.Join(kept, "&") + frag
}

// maybeTokenFree reports a revision value that holds no token.
func maybeTokenFree(v string) bool {
	return !maybeToken(v) || !tokenRE.MatchString(v)
}

// redactKeys replaces the values of secret-named keys.
func redactKeys(s string) string {
	return redactValues(s, keyRE, func(m []int) (int, int, bool) {
		name := s[m[4]:m[5]]
		if !SecretName(name) {
			return 0, 0, false
		}
		sep := s[m[8]:m[9]]
		return m[1], valueEnd(s, m[1], strings.Contains(sep, ":") && headerName(name)), true
	})
}

// redactValues replaces in s, for each match m of re, the value that
// value(m) spans (without its quotes) by RedactedValue; ok false leaves the
// match alone.
func redactValues(s string, re *regexp.Regexp, value func(m []int) (vs, ve int, ok bool)) string {
	idx := re.FindAllStringSubmatchIndex(s, -1)
	if idx == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range idx {
		if m[0] < last {
			continue
		}
		vs, ve, ok := value(m)
		if !ok || ve <= vs {
			continue
		}
		val := s[vs:ve]
		if q := val[0]; (q == '"' || q == '\'') && len(val) >= 2 && val[len(val)-1] == q {
			vs, ve = vs+1, ve-1
			val = s[vs:ve]
		}
		b.WriteString(s[last:vs])
		if val == "" || val == RedactedValue {
			b.WriteString(val)
		} else {
			b.WriteString(RedactedValue)
		}
		last = ve
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// headerName: a name written like an HTTP header (X-Api-Key, Authorization),
// whose value runs to the end of the line.
func headerName(name string) bool {
	switch strings.ToLower(name) {
	case "authorization", "proxy-authorization", "cookie", "set-cookie":
		return true
	}
	return strings.IndexByte(name, '-') > 0 && !strings.HasPrefix(name, "-")
}

// valueEnd returns the end of the value starting at i: a quoted string, the
// rest of the line for a header, or one word.
func valueEnd(s string, i int, header bool) int {
	if i >= len(s) {
		return i
	}
	if q := s[i]; q == '"' || q == '\'' {
		if j := strings.IndexByte(s[i+1:], q); j >= 0 {
			return i + 1 + j + 1
		}
		return len(s)
	}
	j := i
	for j < len(s) {
		c := s[j]
		if c == '\n' || c == '\r' || c == '"' || c == '\'' {
			break
		}
		if !header && (c == ' ' || c == '\t' || c == '&' || c == ';' || c == ',' || c == '}' || c == ']' || c == ')' || c == '|') {
			break
		}
		j++
	}
	// A header value ends before trailing blanks.
	for j > i && (s[j-1] == ' ' || s[j-1] == '\t') {
		j--
	}
	return j
}

// redactFlags replaces the value after a secret-named flag and blanks.
func redactFlags(s string) string {
	return redactValues(s, flagRE, func(m []int) (int, int, bool) {
		name := s[m[2]:m[3]]
		if strings.IndexByte(name, '=') >= 0 || !SecretName(name) {
			return 0, 0, false
		}
		vs := m[1]
		if vs >= len(s) || s[vs] == '-' {
			return 0, 0, false
		}
		return vs, valueEnd(s, vs, false), true
	})
}

// SecretName reports whether a flag, variable, header or key name names a
// secret; see RedactText for the rule.
func SecretName(name string) bool {
	lower := strings.ToLower(name)
	hint := false
	for _, h := range []string{"token", "secret", "passw", "credential", "auth", "key", "cookie"} {
		if strings.Contains(lower, h) {
			hint = true
			break
		}
	}
	if !hint {
		return false
	}
	words := splitWords(strings.TrimLeft(name, "-"))
	for i, w := range words {
		switch w {
		case "token", "secret", "secrets", "password", "passwd", "credential", "credentials",
			"auth", "authorization", "oauth", "cookie", "apikey":
			return true
		case "key":
			if i > 0 && (words[i-1] == "api" || words[i-1] == "access" || words[i-1] == "private") {
				return true
			}
		}
		for _, suffix := range []string{"token", "secret", "password", "passwd", "apikey", "credential", "credentials"} {
			if strings.HasSuffix(w, suffix) {
				return true
			}
		}
	}
	return false
}

// splitWords splits a name at "-", "_", "." and lower-to-upper case changes,
// and lower-cases the words.
func splitWords(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	var prev rune
	for _, r := range name {
		switch {
		case r == '-' || r == '_' || r == '.':
			flush()
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
		prev = r
	}
	flush()
	return words
}
