package collector

import "github.com/bomstream/bomstream/schemas"

// fits says whether bound would leave in as it is, the common case, found
// without allocating: no string over Value, no list over Items, no
// container over its budget, and some of the workload's budget left after
// every element (so that bound would drop nothing). It follows the order
// and the costs of bound.
func (c *cutter) fits(in *schemas.Inputs) bool {
	left := c.left
	if !c.fitsFields(in.Fields, &left) || len(in.Components) > c.b.Items || len(in.Owned) > c.b.Items || len(in.Digests) > c.b.Items {
		return false
	}
	for i := range in.Components {
		if !c.fitsComponent(&in.Components[i], &left) {
			return false
		}
	}
	for i := range in.Owned {
		o := &in.Owned[i]
		if !c.short(o.APIVersion) || !c.short(o.Kind) || !c.short(o.Name) || !c.short(o.UID) {
			return false
		}
		if left -= ownedCost(o); left <= 0 {
			return false
		}
	}
	for i := range in.Digests {
		d := &in.Digests[i]
		if !c.short(d.Image) || !c.short(d.Digest) || !c.short(d.Locator) {
			return false
		}
		if left -= digestCost(d); left <= 0 {
			return false
		}
	}
	return true
}

// fitsFields is fits for a list of fields, their costs paid from *left.
func (c *cutter) fitsFields(fs []schemas.Field, left *int) bool {
	if len(fs) > c.b.Items {
		return false
	}
	for i := range fs {
		f := &fs[i]
		if !c.short(f.Locator) || !c.short(f.Name) || !c.short(f.Value) {
			return false
		}
		if *left -= fieldCost(f); *left <= 0 {
			return false
		}
	}
	return true
}

// fitsComponent is fits for one component: its strings, roles, labels,
// fields, volumes and containers, their costs paid from *left.
func (c *cutter) fitsComponent(comp *schemas.Component, left *int) bool {
	if !c.short(comp.Locator) || !c.short(comp.Name) || len(comp.Roles) > c.b.Items || len(comp.Containers) > c.b.Items {
		return false
	}
	*left -= componentCost(comp)
	for _, r := range comp.Roles {
		if !c.short(r) {
			return false
		}
		*left -= wordCost(r)
	}
	for k, v := range comp.Labels {
		if !c.short(v) {
			return false
		}
		*left -= labelCost(k, v)
	}
	if *left <= 0 || !c.fitsFields(comp.Fields, left) || len(comp.Volumes) > c.b.Items {
		return false
	}
	for k := range comp.Volumes {
		v := &comp.Volumes[k]
		if !c.short(v.Locator) || !c.short(v.Name) || !c.short(v.Image) || !c.short(v.Claim) {
			return false
		}
		*left -= volumeCost(v)
	}
	for j := range comp.Containers {
		if !c.fitsContainer(&comp.Containers[j], left) {
			return false
		}
	}
	return true
}

// fitsContainer is fits for one container: its strings and list lengths,
// then its lists within the container's budget, their costs paid from
// *left.
func (c *cutter) fitsContainer(ct *schemas.Container, left *int) bool {
	if !c.short(ct.Locator) || !c.short(ct.Name) || !c.short(ct.Image) ||
		len(ct.Command) > c.b.Items || len(ct.Args) > c.b.Items || len(ct.Env) > c.b.Items || len(ct.EnvFrom) > c.b.Items ||
		len(ct.Mounts) > c.b.Items || len(ct.Ports) > c.b.Items || len(ct.Probes) > c.b.Items ||
		len(ct.Accelerators) > c.b.Items || len(ct.Files) > c.b.Items {
		return false
	}
	*left -= containerCost(ct)
	spent, ok := c.containerLists(ct)
	if !ok || spent > min(c.b.Container, max(*left, 0)) {
		return false
	}
	*left -= spent
	return *left > 0
}

// containerLists is the cost of a container's command, args, env, envFrom
// and mounts, and false when one of their strings is over Value.
func (c *cutter) containerLists(ct *schemas.Container) (int, bool) {
	spent := 0
	for _, w := range ct.Command {
		if !c.short(w) {
			return 0, false
		}
		spent += wordCost(w)
	}
	for _, w := range ct.Args {
		if !c.short(w) {
			return 0, false
		}
		spent += wordCost(w)
	}
	if !c.fitsEnv(ct.Env) {
		return 0, false
	}
	for k := range ct.Env {
		spent += envCost(&ct.Env[k])
	}
	for k := range ct.EnvFrom {
		e := &ct.EnvFrom[k]
		if !c.short(e.Name) || !c.short(e.Prefix) || !c.fitsEnv(e.Env) {
			return 0, false
		}
		spent += envSourceCost(e)
	}
	for k := range ct.Mounts {
		m := &ct.Mounts[k]
		if !c.short(m.Volume) || !c.short(m.Path) || !c.short(m.SubPath) {
			return 0, false
		}
		spent += mountCost(m)
	}
	n, ok := c.servingFactsCost(ct)
	return spent + n, ok
}

// servingFactsCost is the cost of a container's ports, probes,
// accelerators and files, and false when one of their strings is over
// Value.
func (c *cutter) servingFactsCost(ct *schemas.Container) (int, bool) {
	spent := 0
	for k := range ct.Ports {
		p := &ct.Ports[k]
		if !c.short(p.Name) {
			return 0, false
		}
		spent += portCost(p)
	}
	for k := range ct.Probes {
		p := &ct.Probes[k]
		if !c.short(p.Path) || !c.short(p.Port) {
			return 0, false
		}
		spent += probeCost(p)
	}
	for _, a := range ct.Accelerators {
		if !c.short(a) {
			return 0, false
		}
		spent += wordCost(a)
	}
	for k := range ct.Files {
		f := &ct.Files[k]
		if !c.short(f.Path) || !c.short(f.Locator) || !c.short(f.Text) {
			return 0, false
		}
		spent += fileCost(f)
	}
	return spent, true
}

// fitsEnv reports env vars whose strings are within Value, no more than
// Items of them.
func (c *cutter) fitsEnv(env []schemas.EnvVar) bool {
	if len(env) > c.b.Items {
		return false
	}
	for k := range env {
		e := &env[k]
		if !c.short(e.Name) || !c.short(e.Value) || e.From != nil && (!c.short(e.From.Name) || !c.short(e.From.Key)) {
			return false
		}
	}
	return true
}
