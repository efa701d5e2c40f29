package process

import (
	"context"
	"errors"
	"fmt"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream/changelog"
)

// FindWorkload resolves NAMESPACE/KIND/NAME (key) to the workload's
// identity in cluster (subjects carry uids, not names), through the name
// index of the change log.
func FindWorkload(ctx context.Context, p *Pipeline, cluster, key string) (schemas.Workload, error) {
	ns, kind, name, err := schemas.ParseKey(key)
	if err != nil {
		return schemas.Workload{}, err
	}
	w, err := changelog.New(p.bus).FindWorkload(ctx, cluster, ns, kind, name)
	if errors.Is(err, changelog.ErrNoWorkload) {
		return w, fmt.Errorf("workload %s not found in cluster %s", key, cluster)
	}
	return w, err
}
