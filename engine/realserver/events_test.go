package realserver

import (
	"errors"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/server"
)

// TestNginxEventsChecked: nginx takes a reload or a drain at a time, a drain without grace,
// and nothing after a drain.
func TestNginxEventsChecked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		events []server.Event
		ok     bool
	}{
		{[]server.Event{{Kind: server.EventGoAway, At: time.Second}, {Kind: server.EventDrain, At: 2 * time.Second}}, true},
		{[]server.Event{{Kind: server.EventDrain, At: time.Second, Grace: time.Second}}, false},
		{[]server.Event{{Kind: server.EventRestart, At: time.Second}}, false},
		{[]server.Event{{Kind: server.EventDrain, AfterRequests: 2}}, false},
		{[]server.Event{{Kind: server.EventDrain, At: time.Second}, {Kind: server.EventGoAway, At: 2 * time.Second}}, false},
	} {
		err := Check(Config{Kind: Nginx, IdleTimeout: time.Second, Events: tc.events})
		var fe *FieldError
		if tc.ok && err != nil || !tc.ok && (!errors.As(err, &fe) || fe.Field != "Events") {
			t.Errorf("%+v: %v (want ok %v)", tc.events, err, tc.ok)
		}
	}
	if err := Check(Config{Kind: HAProxy, IdleTimeout: time.Second, Events: []server.Event{{Kind: server.EventDrain, At: time.Second}}}); err == nil {
		t.Error("a drain of HAProxy was accepted")
	}
}
