package transformer

// renderState is the working memory a render leaves for the next one: the
// encode buffer and the BOM builder with its lists (the cdx structures of
// the BOM, which are garbage once it is encoded). It is the only memory
// reused between renders, and only Render touches the pool: it takes a
// state from Renderer.states, builds and encodes the BOM with it, and puts
// it back, reset, when it returns. Nothing in a Result points into it
// (Render copies the BOM out), and what it keeps is bounded (maxKeptOut,
// maxKept).
type renderState struct {
	// out is the encode buffer: what bomBuilder.encode returns points into
	// it until the next encode.
	out []byte
	b   bomBuilder
}

// maxKeptOut bounds the encode buffer a state keeps between renders.
const maxKeptOut = 1 << 20

// state takes a render state from the pool, or makes one.
func (r *Renderer) state() *renderState {
	if st, ok := r.states.Get().(*renderState); ok {
		return st
	}
	return &renderState{out: make([]byte, 0, 16<<10)}
}

// release resets st and gives it back to the pool.
func (r *Renderer) release(st *renderState) {
	if cap(st.out) > maxKeptOut {
		st.out = nil
	}
	st.out = st.out[:0]
	st.b.reset()
	r.states.Put(st)
}

// builder readies the state's builder for the BOM of d, rendered by r.
func (st *renderState) builder(r *Renderer, in bomInput, d *detection) *bomBuilder {
	b := &st.b
	b.cfg, b.in, b.d = r.cfg, in, d
	b.scores = [...]float32{0.2, 0.6, 1}
	b.st, b.purls, b.tools = st, &r.rules.memo.purls, r.tools
	return b
}
