package main

// cloudSinkTypes are the sink types that a build with -tags nocloudsinks
// leaves out (sinks_local.go); the default build has them all
// (TestNoCloudSinksBuild holds the two lists together).
func cloudSinkTypes() []string { return []string{"dependencytrack", "gcs", "oci"} }
