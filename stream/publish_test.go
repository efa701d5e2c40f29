package stream

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// The acks a stream answers are read as jetstream's JSON decoder reads
// them, whether by hand (the usual shapes) or through the decoder.
func TestParsePubAckIsTheDecoder(t *testing.T) {
	for _, c := range []struct {
		body     string
		byHand   bool
		wrongSeq bool // the error is a wrong last sequence
		invalid  bool // jetstream.ErrInvalidJSAck
	}{
		{body: `{"stream":"BOMS","seq":42}`, byHand: true},
		{body: `{"stream":"BOMS","domain":"hub","seq":7}`, byHand: true},
		{body: `{"stream":"BOMS","seq":42,"duplicate":true}`, byHand: true},
		{body: `{"stream":"BOMS","domain":"hub","seq":9,"duplicate":true}`, byHand: true},
		{body: `{"stream":"BOMS","seq":18446744073709551615}`, byHand: true},
		{body: `{"stream":"BOMS","seq":5,"val":"1"}`},
		{body: `{"stream":"BOMS", "seq":5}`},
		{body: `{"seq":5,"stream":"BOMS"}`},
		{body: `{"stream":"B\"O","seq":5}`},
		{body: `{"stream":"BOMS","seq":0}`},
		{body: `{"stream":"BOMS","seq":184467440737095516150}`, invalid: true},
		{body: `{"stream":"","seq":3}`, invalid: true},
		{body: `{"seq":3}`, invalid: true},
		{body: `not json`, invalid: true},
		{body: ``, invalid: true},
		{body: `{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 3"},"stream":"BOMS","seq":0}`, wrongSeq: true},
		{body: `{"error":{"code":503,"err_code":10008,"description":"JetStream cluster not available"}}`},
	} {
		ack, err := parsePubAck([]byte(c.body))
		_, byHand := scanPubAck([]byte(c.body))
		if byHand != c.byHand {
			t.Errorf("%s: read by hand %v, want %v", c.body, byHand, c.byHand)
		}
		var want struct {
			Error *jetstream.APIError `json:"error"`
			*jetstream.PubAck
		}
		jerr := json.Unmarshal([]byte(c.body), &want)
		switch {
		case c.invalid:
			if !errors.Is(err, jetstream.ErrInvalidJSAck) {
				t.Errorf("%s: %+v %v, want ErrInvalidJSAck", c.body, ack, err)
			}
		case jerr != nil:
			t.Fatalf("%s: the decoder: %v", c.body, jerr)
		case want.Error != nil:
			var apiErr *jetstream.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode != want.Error.ErrorCode || IsWrongLastSeq(err) != c.wrongSeq {
				t.Errorf("%s: %v, want the API error %v", c.body, err, want.Error)
			}
			if APIErrorCode(err) != int(want.Error.ErrorCode) {
				t.Errorf("%s: error code %d, want %d", c.body, APIErrorCode(err), want.Error.ErrorCode)
			}
		case err != nil || ack.Seq != want.Sequence || ack.Duplicate != want.Duplicate:
			t.Errorf("%s: %+v %v, want seq %d duplicate %v", c.body, ack, err, want.Sequence, want.Duplicate)
		}
	}
}
