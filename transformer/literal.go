package transformer

import (
	"regexp"
	"regexp/syntax"
)

// requiredLiteral is a text every match of re contains: the longest
// literal the pattern's top-level sequence requires (^(\S*/)?vllm serve:
// "vllm serve"; a server script's pattern: ".py"). "" when there is none
// to be sure of (an alternation at the top, case folded). A head that does
// not contain it cannot match, and is not given to the regex.
func requiredLiteral(re *regexp.Regexp) string {
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return ""
	}
	lit := func(t *syntax.Regexp) string {
		if t.Op != syntax.OpLiteral || t.Flags&syntax.FoldCase != 0 {
			return ""
		}
		return string(t.Rune)
	}
	if tree.Op != syntax.OpConcat {
		return lit(tree)
	}
	best := ""
	for _, sub := range tree.Sub {
		if l := lit(sub); len(l) > len(best) {
			best = l
		}
	}
	return best
}
