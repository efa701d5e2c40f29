package transformer

import (
	"sync"
	"sync/atomic"
)

// memo remembers the values of a pure function of a string, so that a
// Renderer matches the rules' regexes against an image, a command head or
// a word, or parses a script, once and not on every render. It never
// changes an answer. It is bounded: past memoEntries keys, and for keys
// longer than maxLen, values are computed and not stored. It is safe for
// concurrent use.
type memo[V any] struct {
	m      sync.Map // string -> V
	n      atomic.Int64
	maxLen int
}

// memoEntries bounds the keys a memo stores.
const memoEntries = 4096

// get returns f(k), remembered when k was seen before.
func (c *memo[V]) get(k string, f func(string) V) V {
	if v, ok := c.m.Load(k); ok {
		return v.(V)
	}
	v := f(k)
	if len(k) <= c.maxLen && c.n.Load() < memoEntries {
		c.n.Add(1)
		c.m.Store(k, v)
	}
	return v
}

// matchMemo holds the memos of one Renderer's rules.
type matchMemo struct {
	images   memo[*parsedImage] // image reference -> parsed and matched
	commands memo[*invInfo]     // command head -> what the rules say of it
	argsOnly memo[*invInfo]     // head of args given to an entrypoint
	words    memo[*wordInfo]
	shells   memo[*shellScript] // script -> its commands
}

// newMatchMemo makes empty memos. Long keys (a 1 MiB script, a huge word)
// are not stored.
func newMatchMemo() *matchMemo {
	m := &matchMemo{}
	m.images.maxLen = 512
	m.commands.maxLen = 2048 // a head is about 1 KiB past its program
	m.argsOnly.maxLen = 2048
	m.words.maxLen = 256
	m.shells.maxLen = 4096
	return m
}
