package collector

import (
	"regexp"
	"strings"
	"unicode"
)

// Redacted replaces every secret the scrubber finds.
const Redacted = "REDACTED"

// ScrubArgs returns a copy of a command or argument list with secrets
// replaced by "REDACTED":
//
//   - the value after a secret-named flag ("--api-key sk-1" keeps the flag and
//     redacts "sk-1"; "--hf-token=x" becomes "--hf-token=REDACTED"). A flag is
//     secret-named when one of its words (split at "-", "_", "." and case
//     changes) is token, secret, password, passwd, credential(s), auth,
//     authorization, oauth, cookie, apikey, or ends in token, secret,
//     password, passwd, apikey or credential(s), or when two words read
//     "api key", "access key" or "private key". Counting words, not
//     substrings, keeps "--tokenizer MODEL" and "--max-num-batched-tokens N",
//     which are engine configuration, not secrets. A value that starts with
//     "-" is the next flag, not a value, and is kept;
//   - everything ScrubString removes, in every argument, including shell
//     strings such as the script of `sh -c`.
//
// ScrubArgs never fails and runs in time linear in the total length.
func ScrubArgs(args []string) []string { return newScrubber().args(args) }

// ScrubString removes secrets from one string (a shell script, an env value,
// a field): Hugging Face tokens (hf_ followed by 20 or more letters and
// digits), "Bearer <token>", passwords in URLs (scheme://user:pass@),
// secret-looking URL query parameters (?token=..., &api_key=...), values of
// secret-named flags inside the string (as ScrubArgs) and of secret-named
// shell variable assignments (HF_TOKEN=... or export API_KEY=...).
func ScrubString(s string) string { return newScrubber().text(s) }

// scrubber holds the compiled expressions; a Normalizer keeps one.
type scrubber struct {
	hfToken, bearer, urlCred, query, flag, assign *regexp.Regexp
}

func newScrubber() *scrubber {
	return &scrubber{
		hfToken: regexp.MustCompile(`hf_[A-Za-z0-9]{20,}`),
		bearer:  regexp.MustCompile(`(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=-]+`),
		urlCred: regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/\s@:'"]*:[^/\s@'"]+@`),
		query:   regexp.MustCompile(`(?i)([?&][A-Za-z0-9_.-]*(?:token|secret|password|passwd|api[-_]?key|signature|sig|auth|credential)[A-Za-z0-9_.-]*=)[^&\s"'#]+`),
		flag:    regexp.MustCompile(`(^|[\s;|&(])(--?[A-Za-z][A-Za-z0-9_.-]*)(=|[ \t]+)("[^"]*"|'[^']*'|[^\s"';|&)]+)`),
		assign:  regexp.MustCompile(`(^|[\s;|&(])([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|'[^']*'|[^\s"';|&)]+)`),
	}
}

func (s *scrubber) args(args []string) []string {
	if args == nil {
		return nil
	}
	out := make([]string, len(args))
	redactNext := false
	for i, a := range args {
		if redactNext && !strings.HasPrefix(a, "-") {
			out[i] = Redacted
			redactNext = false
			continue
		}
		redactNext = false
		if strings.HasPrefix(a, "-") && !strings.ContainsAny(a, " \t\n") {
			name, _, hasValue := strings.Cut(a, "=")
			if secretName(name) {
				if hasValue {
					out[i] = name + "=" + Redacted
				} else {
					out[i] = a
					redactNext = true
				}
				continue
			}
		}
		out[i] = s.text(a)
	}
	return out
}

func (s *scrubber) text(v string) string {
	// Cheap checks first: most arguments are short words that none of the
	// expressions can match, and regexp calls dominate the cost otherwise.
	space := strings.ContainsAny(v, " \t\n\r")
	eq := strings.IndexByte(v, '=') >= 0
	if strings.Contains(v, "hf_") {
		v = s.hfToken.ReplaceAllLiteralString(v, Redacted)
	}
	if strings.Contains(v, "://") {
		v = s.urlCred.ReplaceAllString(v, "${1}"+Redacted+"@")
	}
	if !space && !eq {
		return v
	}
	if space {
		v = s.bearer.ReplaceAllString(v, "${1}${2}"+Redacted)
	}
	if eq && strings.ContainsAny(v, "?&") {
		v = s.query.ReplaceAllString(v, "${1}"+Redacted)
	}
	if strings.IndexByte(v, '-') >= 0 {
		v = replaceValues(s.flag, v, 2, 4, func(name, val string) bool {
			return secretName(name) && !strings.HasPrefix(val, "-")
		})
	}
	if eq {
		v = replaceValues(s.assign, v, 2, 3, func(name, _ string) bool { return secretName(name) })
	}
	return v
}

// looksLikeCredential reports whether a value that would otherwise be kept
// (an allow-listed env value) carries something secret.
func (s *scrubber) looksLikeCredential(v string) bool {
	return strings.Contains(strings.ToLower(v), "token=") || s.text(v) != v
}

// replaceValues replaces submatch valGroup of every match of re whose
// submatches nameGroup and valGroup satisfy secret with Redacted.
func replaceValues(re *regexp.Regexp, v string, nameGroup, valGroup int, secret func(name, val string) bool) string {
	idx := re.FindAllStringSubmatchIndex(v, -1)
	if idx == nil {
		return v
	}
	var b strings.Builder
	last := 0
	for _, m := range idx {
		name := v[m[2*nameGroup]:m[2*nameGroup+1]]
		vs, ve := m[2*valGroup], m[2*valGroup+1]
		if !secret(name, v[vs:ve]) || v[vs:ve] == Redacted {
			continue
		}
		b.WriteString(v[last:vs])
		b.WriteString(Redacted)
		last = ve
	}
	if last == 0 {
		return v
	}
	b.WriteString(v[last:])
	return b.String()
}

// secretName reports whether a flag or variable name names a secret; see
// ScrubArgs for the rule.
func secretName(name string) bool {
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
