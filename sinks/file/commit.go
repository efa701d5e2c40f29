package file

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sync"
	"time"
)

// committer batches durability: every caller of wait gets the outcome of
// one flush that started after it called, and callers that arrive while a
// flush runs share the next one (group commit). Under load (the last flush
// served more than one caller) a flush starts no sooner than holdFactor
// times the last flush's duration (at least minHold, at most interval)
// after the previous one started, so that the callers of that time share it
// too: slow flushes (syncfs on a disk) are made fewer and larger, cheap
// ones (tmpfs) are hardly held back. A lone caller is flushed at once.
type committer struct {
	flush    func() error
	interval time.Duration

	mu      sync.Mutex
	running bool
	waiting []chan error
	// Of the last flush: when it started, how long it took and how many
	// callers it served. Read and written by the one loop.
	lastStart time.Time
	lastTook  time.Duration
	lastBatch int
}

// wait returns once a flush that began after the call has finished, with
// its error, or when ctx is done.
func (c *committer) wait(ctx context.Context) error {
	ch := make(chan error, 1)
	c.mu.Lock()
	c.waiting = append(c.waiting, ch)
	if !c.running {
		c.running = true
		go c.loop()
	}
	c.mu.Unlock()
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// How long a flush under load is held back after the previous one
// started: holdFactor times the last flush's duration, at least minHold, at
// most the interval. On a disk, where a flush takes milliseconds, that is
// the whole interval; on tmpfs, where it takes tens of microseconds, a
// millisecond, which still gathers a few exports per flush.
const (
	holdFactor = 5
	minHold    = time.Millisecond
)

func (c *committer) loop() {
	for {
		// Only one loop runs at a time (running), and the one before it
		// ended under mu: the last* fields need no lock of their own.
		if c.lastBatch > 1 { // under load: hold this flush back
			hold := min(c.interval, max(holdFactor*c.lastTook, minHold))
			time.Sleep(hold - time.Since(c.lastStart)) // returns at once if negative
		}
		c.mu.Lock()
		batch := c.waiting
		c.waiting = nil
		if len(batch) == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		c.lastStart, c.lastBatch = time.Now(), len(batch)
		err := c.flush()
		c.lastTook = time.Since(c.lastStart)
		for _, ch := range batch {
			ch <- err
		}
	}
}

// flush makes everything written under the sink's tree durable; see
// flushFS for the platform's way.
func (s *Sink) flush() error {
	d, err := os.Open(s.dir)
	if errors.Is(err, fs.ErrNotExist) { // nothing written yet, or the tree was removed
		if err = os.MkdirAll(s.dir, 0o755); err == nil {
			d, err = os.Open(s.dir)
		}
	}
	if err != nil {
		return err
	}
	err = flushFS(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
