// Package check verifies bomstream's store and repairs what can be derived
// again: `bomstream check [--repair]`, and the check `bomstream run` makes
// when it starts.
//
// A store can be damaged while nothing runs: a block file cut short by a
// full disk or a careless copy, a consumer's state file emptied. The server
// opens it anyway, with holes in the sequences and counts that no longer add
// up; nothing would notice, and every reader that trusted the counts would
// wait for messages that never come. Check reads what the store holds and
// holds the parts against each other:
//
//	streams    CHANGES and BOMS: messages, first and last sequence, and the
//	           sequences in between that hold nothing (Lost). bomstream never
//	           deletes from either, so a hole is a loss.
//	outcomes   every change event the transformer has handled (at or below
//	           its ack floor, or followed by a later outcome of its workload)
//	           has its outcome on BOMS: a BOM or a tombstone whose change
//	           sequence is the event's sequence, or it renders no
//	           BOM. An event without one is rendered again to tell which,
//	           unless another transformer handled it (Config.OtherUpTo:
//	           other rules may have rendered it to nothing).
//	changes    BOMS outcomes whose change CHANGES lost name the workloads
//	           whose history has a hole there.
//	consumers  a consumer delivered past its stream's last sequence (the
//	           stream lost its tail and new messages would be skipped), and
//	           a transformer consumer that delivered less than BOMS shows it
//	           handled (its state was lost, and it would publish every BOM a
//	           second time).
//	ledgers    each sink ledger's entries against BOMS: a version BOMS does
//	           not hold, and a workload whose latest outcome the sink's
//	           consumer went past without the ledger recording it.
//
// Each finding is a Problem or a Note, names the workloads it concerns, and
// says what Repair does about it, if anything:
//
//   - a lost outcome is rendered again from its change event by the
//     transformer's own steps (service.Outcome, then Publish: the same
//     bytes, headers and Nats-Msg-Id), workload by workload in change order;
//     when a workload's lost outcome is older than one BOMS still holds,
//     that latest outcome is appended again after it, so that the last
//     message of the workload's subject stays its current state (history
//     shows each change once, whatever BOMS holds twice);
//   - a transformer consumer that is ahead of CHANGES or lost its state is
//     deleted: the stage creates it again over the history and skips every
//     change whose outcome BOMS holds;
//   - a sink consumer that is ahead of BOMS, or went past outcomes its
//     ledger lacks, is reset to the first message it must see again; the
//     ledger skips what the sink already applied.
//
// What CHANGES lost cannot be derived from anything: the workloads are named
// and the hole stays. A sink's own store is not read: what a ledger says the
// sink holds is taken as true, and `bomstream replay --sink NAME
// --ignore-ledger` rewrites a store from BOMS.
package check
