package transformer

import (
	"sync"

	"github.com/bomstream/bomstream/schemas/cmdline"
)

// memo remembers the values of a pure function of a string, so that a
// Renderer matches the rules' regexes against an image, a command head or
// a word, or parses a script, once and not on every render. It never
// changes an answer. It is bounded: past memoEntries keys, and for keys
// longer than maxLen, values are computed and not stored. It is safe for
// concurrent use.
type memo[V any] struct {
	mu     sync.RWMutex
	m      map[string]V
	maxLen int
}

// memoEntries bounds the keys a memo stores.
const memoEntries = 4096

// get returns f(k), remembered when k was seen before.
func (c *memo[V]) get(k string, f func(string) V) V {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return v
	}
	return c.store(k, f(k))
}

// getBytes is get of the key held in k: it makes no string of a key seen
// before.
func (c *memo[V]) getBytes(k []byte, f func(string) V) V {
	c.mu.RLock()
	v, ok := c.m[string(k)]
	c.mu.RUnlock()
	if ok {
		return v
	}
	s := string(k)
	return c.store(s, f(s))
}

// store remembers v as the value of k, unless k is too long or the memo
// is full, and returns v.
func (c *memo[V]) store(k string, v V) V {
	if len(k) > c.maxLen {
		return v
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[string]V)
	}
	if len(c.m) < memoEntries {
		c.m[k] = v
	}
	c.mu.Unlock()
	return v
}

// matchMemo holds the memos of one Renderer: what its rules say of
// strings, and the purls of model ids.
type matchMemo struct {
	images    memo[*parsedImage] // image reference -> parsed and matched
	names     memo[*imageInfo]   // image name (no tag, no digest) -> what the rules say of it
	commands  memo[*invInfo]     // command head -> what the rules say of it
	argsOnly  memo[*invInfo]     // head of args given to an entrypoint
	words     memo[*wordInfo]
	shells    memo[*cmdline.Script] // script -> its commands
	purls     memo[string]          // len(id):id rev -> Hugging Face purl
	clientEnv memo[bool]            // env name -> it marks a client
	// envFamilies: env name -> the engine whose env family it is.
	envFamilies memo[*runtimeRule]
	// rawWords: an image reference that does not parse -> its engine word.
	rawWords memo[wordHit]
	// engines: a label value or a container's name -> the engine it names.
	engines, ctrNames memo[*runtimeRule]
	ignored           memo[bool] // model value -> models.ignore matches it
}

// newMatchMemo makes empty memos. Long keys (a 1 MiB script, a huge word)
// are not stored.
func newMatchMemo() *matchMemo {
	m := &matchMemo{}
	m.images.maxLen = 512
	m.names.maxLen = 512
	m.commands.maxLen = 2048 // a head is about 1 KiB past its program
	m.argsOnly.maxLen = 2048
	m.words.maxLen = 256
	m.shells.maxLen = 4096
	m.purls.maxLen = 512
	m.clientEnv.maxLen = 256
	m.envFamilies.maxLen = 256
	m.rawWords.maxLen = 512
	m.engines.maxLen = 256
	m.ctrNames.maxLen = 256
	m.ignored.maxLen = 512
	return m
}
