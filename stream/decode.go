package stream

import (
	jsonv2 "github.com/go-json-experiment/json"

	"github.com/bomstream/bomstream/schemas"
)

// DecodeChange reads a CHANGES message body. It is the encoding/json/v2
// decoder (about twice as fast as encoding/json's on events, and strict:
// field names match exactly, duplicate names and invalid UTF-8 are errors),
// which every reader of CHANGES shares. Encoding stays with encoding/json:
// the input hash is defined on its output.
func DecodeChange(data []byte) (schemas.WorkloadChange, error) {
	var ev schemas.WorkloadChange
	err := jsonv2.Unmarshal(data, &ev)
	return ev, err
}
