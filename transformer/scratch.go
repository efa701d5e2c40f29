package transformer

import (
	"slices"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// scratch is the reusable memory of one Render: the detection state, the cdx
// objects of the BOM being built (which nothing references once it is
// encoded) and the encode buffer. A Renderer keeps scratches in a sync.Pool:
// a render takes one and gives it back reset; nothing in a Result points into
// it. What it keeps between renders is bounded (maxSlab, maxKeep,
// maxScratchOut).
type scratch struct {
	props   slab[cdx.Property]
	methods slab[cdx.EvidenceIdentityMethod]
	occ     slab[cdx.EvidenceOccurrence]
	blocks  slab[evidenceBlock]
	comps   slab[cdx.Component]
	deps    slab[cdx.Dependency]
	strs    slab[string]
	propHdr slab[[]cdx.Property]
	strHdr  slab[[]string]
	ints    slab[int32]
	infos   slab[*invInfo]
	meta    metaBlock
	out     []byte

	// runtimeNames and modelKeys are the sorted keys build used.
	runtimeNames, modelKeys []string
	// evidenceCap, when not 0, is the most identity methods and occurrences
	// listed in one component's evidence (a BOM shrunk to its limit).
	evidenceCap int

	// Detection state, reused with the capacity of its slices.
	det       detection
	wl        compDetect
	cds       []compDetect
	hitPool   objPool[runtimeHit]
	modelPool objPool[modelHit]
	ctrPool   objPool[containerHit]
	args      argBufs
}

// metaBlock holds the BOM and its metadata.
type metaBlock struct {
	meta  cdx.Metadata
	tools cdx.ToolsChoice
	tool  [1]cdx.Component
	tl    []cdx.Component
	comp  cdx.Component
	comps []cdx.Component
	deps  []cdx.Dependency
	bom   cdx.BOM
}

// maxScratchOut bounds the encode buffer kept between renders.
const maxScratchOut = 1 << 20

// reset readies s for the next render. Old values are overwritten, not
// cleared (see slab.reset).
func (s *scratch) reset() {
	s.props.reset()
	s.methods.reset()
	s.occ.reset()
	s.blocks.reset()
	s.comps.reset()
	s.deps.reset()
	s.strs.reset()
	s.propHdr.reset()
	s.strHdr.reset()
	s.ints.reset()
	s.infos.reset()
	if cap(s.out) > maxScratchOut {
		s.out = nil
	}
	s.out = s.out[:0]
	s.runtimeNames, s.modelKeys = nil, nil
	s.evidenceCap = 0
	s.det.reset()
	s.wl.reset()
	// cds keeps its length: each element keeps its slices for the next render.
	for i := range s.cds {
		s.cds[i].reset()
	}
	if len(s.cds) > maxKeep {
		s.cds = nil
	}
	s.hitPool.reset((*runtimeHit).reset)
	s.modelPool.reset((*modelHit).reset)
	s.ctrPool.reset((*containerHit).reset)
	s.args.reset()
}

// order returns 0..n-1 sorted by cmp.
func (s *scratch) order(n int, cmp func(i, j int32) int) []int32 {
	idx := s.ints.take(n)
	for i := range n {
		idx = append(idx, int32(i))
	}
	slices.SortFunc(idx, cmp)
	return idx
}

func (s *scratch) newHit(rule *runtimeRule, conf string) *runtimeHit {
	h := s.hitPool.get()
	h.rule, h.conf = rule, conf
	return h
}

// maxKeep bounds the capacity a reused slice keeps between renders.
const maxKeep = 1024

// trunc empties s for reuse; a slice grown past maxKeep is let go. Like a
// slab, it leaves the old elements in place: s is only appended to.
func trunc[T any](s []T) []T {
	if cap(s) > maxKeep {
		return nil
	}
	return s[:0]
}

// objPool hands out reusable objects; reset readies them for the next render.
type objPool[T any] struct {
	items []*T
	n     int
}

func (p *objPool[T]) get() *T {
	if p.n < len(p.items) {
		p.n++
		return p.items[p.n-1]
	}
	x := new(T)
	if len(p.items) < maxKeep {
		p.items = append(p.items, x)
		p.n++
	}
	return x
}

func (p *objPool[T]) reset(clean func(*T)) {
	for _, x := range p.items[:p.n] {
		clean(x)
	}
	p.n = 0
}

func (k *keyed[T]) reset() {
	k.keys = trunc(k.keys)
	k.items = trunc(k.items)
	if k.index != nil {
		k.index = nil
	}
}

func (s *strset) reset() { s.k.reset() }

func (h *runtimeHit) reset() {
	h.wrappedBy.reset()
	h.models.reset()
	*h = runtimeHit{
		versions:  trunc(h.versions),
		backends:  trunc(h.backends),
		wrappedBy: h.wrappedBy,
		roles:     trunc(h.roles),
		proofs:    trunc(h.proofs),
		settings:  trunc(h.settings),
		models:    h.models,
	}
}

func (m *modelHit) reset() {
	m.revisions.reset()
	*m = modelHit{
		revisions: m.revisions,
		roles:     trunc(m.roles),
		proofs:    trunc(m.proofs),
	}
}

func (c *containerHit) reset() {
	c.digests.reset()
	c.containers.reset()
	*c = containerHit{
		roles:      trunc(c.roles),
		proofs:     trunc(c.proofs),
		digests:    c.digests,
		containers: c.containers,
		truncated:  trunc(c.truncated),
	}
}

func (d *detection) reset() {
	d.runtimes.reset()
	d.models.reset()
	d.containers.reset()
	d.workloadM.reset()
	*d = detection{
		runtimes:   d.runtimes,
		models:     d.models,
		containers: d.containers,
		roles:      trunc(d.roles),
		simulators: trunc(d.simulators),
		noImage:    trunc(d.noImage),
		truncated:  trunc(d.truncated),
		workloadM:  d.workloadM,
	}
}

func (c *compDetect) reset() {
	c.models.reset()
	c.images.reset()
	*c = compDetect{
		roles:         trunc(c.roles),
		hits:          trunc(c.hits),
		backends:      trunc(c.backends),
		engineFlags:   trunc(c.engineFlags),
		settings:      trunc(c.settings),
		models:        c.models,
		images:        c.images,
		backendProofs: trunc(c.backendProofs),
		engineProofs:  trunc(c.engineProofs),
		pending:       trunc(c.pending),
		downloads:     trunc(c.downloads),
	}
}

// slab hands out slices of T cut from one backing array that is reused from
// render to render. A slice from take has a fixed capacity, so appending past
// it moves to fresh memory and never into a neighbour.
type slab[T any] struct {
	buf  []T
	need int // asked for since the last reset; sizes the next round
}

// maxSlab bounds the elements a slab keeps between renders.
const maxSlab = 1 << 14

// take returns an empty slice with room for n.
func (s *slab[T]) take(n int) []T {
	s.need += n
	l := len(s.buf)
	if l+n > cap(s.buf) {
		return make([]T, 0, n)
	}
	s.buf = s.buf[:l+n]
	return s.buf[l : l : l+n]
}

// one returns a pointer to a zero T.
func (s *slab[T]) one() *T {
	x := s.take(1)[:1]
	var zero T
	x[0] = zero
	return &x[0]
}

// reset makes what was handed out available again and, when that did not
// fit, makes room for as much next time. The old contents are not cleared:
// take hands out empty slices, which are only ever appended to, and one
// zeroes its element, so stale values are never read; they only stay
// reachable until overwritten, within the bounded slab.
func (s *slab[T]) reset() {
	if s.need > cap(s.buf) && s.need <= maxSlab {
		s.buf = make([]T, 0, s.need)
	} else {
		s.buf = s.buf[:0]
	}
	s.need = 0
}
