package file

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sync"
)

// committer batches durability: every caller of wait gets the outcome of
// one flush that started after it called, and callers that arrive while a
// flush runs share the next one (group commit).
type committer struct {
	flush func() error

	mu      sync.Mutex
	running bool
	waiting []chan error
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

func (c *committer) loop() {
	for {
		c.mu.Lock()
		batch := c.waiting
		c.waiting = nil
		if len(batch) == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		err := c.flush()
		for _, ch := range batch {
			ch <- err
		}
	}
}

// flush writes the journal lines put since the last batch and, when the
// sink is durable, makes everything written under the sink's tree durable;
// see flushFS for the platform's way.
func (s *Sink) flush() error {
	if err := s.journal.writePending(); err != nil {
		return err
	}
	if !s.fsync {
		return nil
	}
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
