package dtracktest

import "io"

// countingBody counts the request body bytes a route reads, for BytesIn.
type countingBody struct {
	io.ReadCloser
	s       *Server
	pattern string
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if n > 0 {
		c.s.mu.Lock()
		c.s.bytesIn[c.pattern] += int64(n)
		c.s.mu.Unlock()
	}
	return n, err
}

// BytesIn is the number of request body bytes a route read, by its
// pattern (see Calls): what the client put on the wire for it, less the
// request line and headers. An upload's body is read whole, so for
// "PUT /api/v1/bom" and "POST /api/v1/bom" it is every body sent.
func (s *Server) BytesIn(pattern string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytesIn[pattern]
}
