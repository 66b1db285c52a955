package h3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/quic-go/quic-go"

	"github.com/kalab-dev/kalab/engine/client"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want client.ErrorClass
	}{
		{nil, client.ClassNone},
		{context.DeadlineExceeded, client.ClassTimeout},
		{&quic.IdleTimeoutError{}, client.ClassTimeout},
		{&quic.HandshakeTimeoutError{}, client.ClassTimeout},
		{&quic.TransportError{ErrorCode: 0x12a, Remote: false}, client.ClassTLS}, // bad_certificate
		{&quic.StatelessResetError{}, client.ClassReset},
		{&quic.ApplicationError{ErrorCode: codeNoError, Remote: true}, client.ClassReset},
		{&quic.ApplicationError{ErrorCode: codeNoError, Remote: false}, client.ClassOther},
		{&quic.StreamError{ErrorCode: 0x10b, Remote: true}, client.ClassReset},
		{&quic.TransportError{ErrorCode: quic.ProtocolViolation, Remote: true}, client.ClassReset},
		{io.ErrUnexpectedEOF, client.ClassEOF},
		{quic.Err0RTTRejected, client.ClassOther},
	} {
		wrapped := fmt.Errorf("request: %w", tc.err)
		if tc.err == nil {
			wrapped = nil
		}
		if got := Classify(wrapped); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.err, got, tc.want)
		}
	}
	if got := Classify(errors.Join(context.DeadlineExceeded, &quic.StreamError{Remote: false})); got != client.ClassTimeout {
		t.Errorf("a stream the attempt's deadline cancelled: %q, want timeout", got)
	}
}
