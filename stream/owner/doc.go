// Package owner is the data directory's side of the embedded store: who owns
// it, how other processes reach that owner, and the upkeep only the owner does.
//
// One process owns an embedded data directory at a time. Claim takes an
// exclusive flock on <dir>/bomstream.lock (the kernel releases it when the
// process dies, however it dies) and Advertise writes <dir>/owner.json (mode
// 0600): the pid, a loopback address of the owner's server and a credential
// for it. A second process that wants to own the directory gets ErrInUse,
// naming the owner's pid and start time. A command that only reads or asks
// for work (history, get, replay, dlq) waits for the advertisement (Wait)
// and connects through it instead of opening the store a second time, which
// would corrupt it. Release removes owner.json, then the lock; Drop, for a
// simulated crash, lets the lock go and leaves owner.json behind, as a dead
// process would.
//
// Control requests carry the work that must run in the owner, because its
// sinks keep state in memory: a replay into a sink, a dead-letter retry.
// They travel on core NATS subjects "bomstream.control.<name>" and are never
// stored. A request gets one progress message at once (the owner is there),
// any number of progress messages after, then one result or one error; an
// error's text is redacted, and a handler that panics answers with an error
// instead of ending the process that owns the store. Silence for ten seconds
// is ErrNoOwner.
//
// Retention is the owner's upkeep of CHANGES: the stream has no age limit on
// the server, because deletions are computed from each workload's last
// event, so a workload not seen for longer than the limit must still be
// known. EnforceRetention purges every subject's events older than the limit
// except the subject's last one; KeepRetention runs it every tenth of the
// limit (at most hourly).
//
// The package knows nothing of the Bus: stream uses it to claim and release
// the directory, and the retention and control code take the narrow
// interface or connection they need.
package owner
