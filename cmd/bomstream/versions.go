package main

import "sort"

// byChange puts a workload's versions in change order, each change once.
// BOMS normally holds them so already; after a repair it may hold a version
// rendered again later than its successors, and its latest version once
// more after it (see docs/check.md). Versions without a change sequence
// leave the order as stored.
func byChange(vs []bomVersion) []bomVersion {
	for _, v := range vs {
		if v.ChangeSeq == 0 {
			return vs
		}
	}
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].ChangeSeq < vs[j].ChangeSeq })
	out := vs[:0]
	for _, v := range vs {
		if len(out) > 0 && v.ChangeSeq == out[len(out)-1].ChangeSeq {
			continue
		}
		out = append(out, v)
	}
	return out
}
