// Package deadletter is the dead-letter store: the DLQ stream, where a
// stage parks a message it gave up on, with the reason.
//
// A [Store] is built over a [stream.Bus] with [New]. [Store.Put] writes a
// [Letter] on bomstream.dlq.<stage>: the failed message's bytes and
// headers, and where it was stored, who gave up on it, how often it was
// delivered, when, and why. Its message id, made by [ID], is one per
// stage, stream and sequence. A stage that dead-letters one message twice
// then stores it once.
//
// [Store.List], [Store.Get] and [Store.Remove] serve `bomstream dlq`
// and the consume engine's redrive: list a stage's letters, read one,
// and delete it once it was dealt with. [Reason] makes an error text
// fit a header: one line, valid UTF-8, at most [MaxReasonBytes].
package deadletter
