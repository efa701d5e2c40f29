package clustertest

import (
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP connections from a loopback port to a target address
// until it is cut: Cut closes every connection and refuses new ones (they
// are accepted and closed at once, as a dropped link looks to a client
// that keeps redialling); Restore lets them through again. Stall holds
// every byte in both directions, connections kept open, until Flow: what a
// client sees of a server that does not answer (a stream whose leader is
// being elected) without the disconnect it would notice.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	flowing *sync.Cond // signalled when stalled or cut changes
	cut     bool
	stalled bool
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

// NewProxy listens on a loopback port and forwards to target ("host:port").
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &Proxy{ln: ln, target: target, conns: make(map[net.Conn]struct{})}
	p.flowing = sync.NewCond(&p.mu)
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		_ = ln.Close()
		p.Cut()
		p.wg.Wait()
	})
	return p
}

// Addr is the proxy's "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every forwarded connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
	p.flowing.Broadcast()
}

// Stall holds what either side sends, connections open, until Flow.
func (p *Proxy) Stall() {
	p.mu.Lock()
	p.stalled = true
	p.mu.Unlock()
}

// Flow delivers what Stall held and lets bytes through again.
func (p *Proxy) Flow() {
	p.mu.Lock()
	p.stalled = false
	p.mu.Unlock()
	p.flowing.Broadcast()
}

// wait returns once bytes may pass: not stalled, or cut (the write then
// fails on a closed connection).
func (p *Proxy) wait() {
	p.mu.Lock()
	for p.stalled && !p.cut {
		p.flowing.Wait()
	}
	p.mu.Unlock()
}

// Restore lets connections through again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

func (p *Proxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			_ = in.Close()
			continue
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = in.Close()
			continue
		}
		if !p.track(in, out) {
			continue
		}
		p.wg.Go(func() { p.pipe(in, out) })
		p.wg.Go(func() { p.pipe(out, in) })
	}
}

// track registers a connection pair, or closes it when a cut came between.
func (p *Proxy) track(in, out net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		_ = in.Close()
		_ = out.Close()
		return false
	}
	p.conns[in], p.conns[out] = struct{}{}, struct{}{}
	return true
}

func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.wait()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}
