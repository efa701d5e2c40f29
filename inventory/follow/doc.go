// Package follow is the read side's one way to keep an index current
// with a stream. The inventory index (BOMS) and the findings index
// (FINDINGS) both use it.
//
// An index implements [Index]: it applies messages in stream order and
// says where it stands ([Index.LastSeq]). [Load] reads what the stream
// holds after that point, up to its last message, and settles the index.
// A [Follower] loads once, then applies each message an ordered consumer
// pushes: no poll, nothing durable on the server. The consumer rides
// through a reconnect or a server restart, resuming after the last
// message it delivered. When it ends, the Follower loads again from the
// index's LastSeq and follows anew.
//
// Messages a damaged store lost are stepped over, with a warning naming
// them, as stream.Bus's Messages does. [Follower.Loaded] says the first
// load is done; [Follower.Wait] blocks until the index holds a given
// sequence, for health checks and tests.
package follow
