package main

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command shows how people run it: an Example whose every line
// invokes the command (or one below it) with flags it has.
func TestEveryCommandHasAnExample(t *testing.T) {
	root := newRoot(&env{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }})
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		n++
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s: no Example", c.CommandPath())
		}
		for line := range strings.SplitSeq(c.Example, "\n") {
			if err := exampleInvokes(root, c, strings.TrimSpace(line)); err != "" {
				t.Errorf("%s: example %q: %s", c.CommandPath(), line, err)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if n < 20 {
		t.Errorf("walked %d commands; the tree has more", n)
	}
}

// exampleInvokes says what is wrong with an example line of c: it must run
// c or a command below it, and name only flags that command has.
func exampleInvokes(root, c *cobra.Command, line string) string {
	words := strings.Fields(line)
	if len(words) == 0 || words[0] != root.Name() {
		return "does not start with " + root.Name()
	}
	got, rest := root, words[1:]
	for len(rest) > 0 {
		var next *cobra.Command
		for _, sub := range got.Commands() {
			if sub.Name() == rest[0] {
				next = sub
			}
		}
		if next == nil {
			break
		}
		got, rest = next, rest[1:]
	}
	under := false
	for p := got; p != nil; p = p.Parent() {
		under = under || p == c
	}
	if !under {
		return "runs " + got.CommandPath()
	}
	for _, w := range rest {
		name, _, _ := strings.Cut(w, "=")
		switch {
		case strings.HasPrefix(name, "--"):
			if got.Flags().Lookup(name[2:]) == nil && got.InheritedFlags().Lookup(name[2:]) == nil {
				return got.CommandPath() + " has no flag " + name
			}
		case strings.HasPrefix(name, "-") && len(name) == 2:
			if got.Flags().ShorthandLookup(name[1:]) == nil {
				return got.CommandPath() + " has no flag " + name
			}
		}
	}
	return ""
}
