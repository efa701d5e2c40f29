package stream

// Reader reads what the streams store: walks over a subject's messages,
// the last message per subject, one message by sequence, and a stream's
// state with the sequences its store lost. It holds nothing but the bus,
// so it is cheap to pass by value and safe for concurrent use.
type Reader struct{ b *Bus }

// Reader hands out the bus's reads.
func (b *Bus) Reader() Reader { return Reader{b} }
