package dtracktest

import "slices"

// The release lines the double speaks (Options.Version), each at the
// version whose source DEPENDENCY-TRACK.md was read from.
const (
	// Line412 is 4.12: projectTags and isLatestProjectVersion on upload,
	// no collection projects.
	Line412 = "4.12.7"
	// Line413 is 4.13: collection projects (collectionLogic NONE by default).
	Line413 = "4.13.6"
	// Line414 is 4.14 as of 4.14.4: isLatest on upload (isLatestProjectVersion
	// still read), CycloneDX 1.7 accepted.
	Line414 = "4.14.4"
	// Line50 is 5.0: the 5.x wordings, problem documents, fine-grained
	// permissions, no collectionLogic NONE, the upload's projectUuid, and no
	// CycloneDX 1.7.
	Line50 = "5.0.4"
	// Line51 is what the 5.1 `main` branch has: isActive on upload, gzip and
	// zstd multipart BOMs, CycloneDX 1.7.
	Line51 = "5.1.0-SNAPSHOT"
)

// Lines are the release lines, oldest first.
func Lines() []string { return []string{Line412, Line413, Line414, Line50, Line51} }

// Fine-grained permissions of 5.x, accepted alongside PortfolioManagement.
const (
	PortfolioManagementCreate = "PORTFOLIO_MANAGEMENT_CREATE"
	PortfolioManagementUpdate = "PORTFOLIO_MANAGEMENT_UPDATE"
	PortfolioManagementDelete = "PORTFOLIO_MANAGEMENT_DELETE"
)

// features is what a server version does differently, point by point of
// DEPENDENCY-TRACK.md.
type features struct {
	spec16      bool // JSON specVersion 1.6 accepted (4.11.4)
	tags        bool // projectTags, isLatestProjectVersion, Project.isLatest (4.12.0)
	collections bool // collectionLogic (4.13.0)
	isLatest    bool // upload field isLatest, isLatestProjectVersion its alias (4.14.0, 5.x)
	spec17      bool // JSON specVersion 1.7 accepted (4.14.4 on 4.x, 5.1 on 5.x)
	v5          bool // the "Changed in 5.x" points 2-10
	isActive    bool // upload field isActive (5.1 main)
	compressed  bool // gzip and zstd multipart bom parts (5.1 main)
}

func featuresOf(v semver) features {
	f := features{
		spec16:      v.atLeast(4, 11, 4),
		tags:        v.atLeast(4, 12, 0),
		collections: v.atLeast(4, 13, 0),
		isLatest:    v.atLeast(4, 14, 0),
		v5:          v.atLeast(5, 0, 0),
		isActive:    v.atLeast(5, 1, 0),
		compressed:  v.atLeast(5, 1, 0),
	}
	f.spec17 = v.atLeast(5, 1, 0) || (!f.v5 && v.atLeast(4, 14, 4))
	return f
}

// anyOf reports whether perms holds one of want.
func anyOf(perms map[string]bool, want ...string) bool {
	return slices.ContainsFunc(want, func(p string) bool { return perms[p] })
}

// mayCreate: autoCreate's permission (4.x: PORTFOLIO_MANAGEMENT or
// PROJECT_CREATION_UPLOAD; 5.x adds PORTFOLIO_MANAGEMENT_CREATE).
func (s *Server) mayCreate(perms map[string]bool) bool {
	if s.feat.v5 {
		return anyOf(perms, PortfolioManagement, PortfolioManagementCreate, ProjectCreationUpload)
	}
	return anyOf(perms, PortfolioManagement, ProjectCreationUpload)
}

// manage lists the permissions a project route of kind (create, update,
// delete) accepts.
func (s *Server) manage(kind string) []string {
	if !s.feat.v5 {
		return []string{PortfolioManagement}
	}
	switch kind {
	case "create":
		return []string{PortfolioManagement, PortfolioManagementCreate}
	case "delete":
		return []string{PortfolioManagement, PortfolioManagementDelete}
	}
	return []string{PortfolioManagement, PortfolioManagementUpdate}
}
