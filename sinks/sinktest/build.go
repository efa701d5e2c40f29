package sinktest

import (
	"fmt"
	"time"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
)

// epoch is the time NewBOM and NewTombstone count from.
func epoch() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

// Workload is a test Deployment called name in namespace "ml" of cluster
// "dev", with a uid derived from name.
func Workload(name string) schemas.Workload {
	return schemas.Workload{
		Cluster: "dev", Namespace: "ml", APIVersion: "apps/v1", Kind: "Deployment",
		Name: name, UID: fmt.Sprintf("uid-%x", []byte(name)),
	}
}

// NewBOM builds a small, valid CycloneDX-shaped BOM for w rendered from change
// changeSeq. Equal arguments give equal bytes; different changeSeqs give
// different bomHashes. StreamSeq is set to changeSeq.
func NewBOM(w schemas.Workload, changeSeq uint64) sinks.BOM {
	body, _ := schemas.CanonicalJSON(map[string]any{
		"bomFormat":   "CycloneDX",
		"specVersion": "1.6",
		"version":     1,
		"metadata": map[string]any{
			"component": map[string]any{
				"type": "application",
				"name": w.Name,
				"properties": []map[string]string{
					{"name": "bomstream:cluster", "value": w.Cluster},
					{"name": "bomstream:uid", "value": w.UID},
					{"name": "bomstream:changeSeq", "value": fmt.Sprint(changeSeq)},
				},
			},
		},
	})
	return sinks.BOM{
		Workload:  w,
		BomHash:   schemas.BomHash(body),
		InputHash: schemas.BomHash([]byte(fmt.Sprintf("inputs %s %d", w.UID, changeSeq))),
		ChangeSeq: changeSeq,
		StreamSeq: changeSeq,
		Time:      epoch().Add(time.Duration(changeSeq) * time.Second),
		Body:      body,
	}
}

// NewTombstone is the tombstone of w recorded by change changeSeq.
func NewTombstone(w schemas.Workload, changeSeq uint64) sinks.Tombstone {
	return sinks.Tombstone{
		Workload: w, Reason: sinks.ReasonDeleted, ChangeSeq: changeSeq, StreamSeq: changeSeq,
		Time: epoch().Add(time.Duration(changeSeq) * time.Second),
	}
}

// Version is the version b is, for sinks.Locator: its workload, hash,
// change and images; latest says whether it is the workload's current one.
func Version(b sinks.BOM, latest bool) sinks.Version {
	return sinks.Version{Workload: b.Workload, BomHash: b.BomHash, ChangeSeq: b.ChangeSeq, Images: b.Images, Latest: latest}
}
