package explain

import "testing"

// TestReasonTextSaysWhose: the same reason reads differently by who closed: "idle" by the
// server names the server's timeout, by the client the client's; the pool's own reasons
// have their words.
func TestReasonTextSaysWhose(t *testing.T) {
	var r Run
	r.params.Server.IdleTimeout, r.params.Client.IdleTimeout = "5s", "1s"
	for _, c := range []struct{ who, reason, want string }{
		{"server", "idle", "idle timeout: server.idle_timeout 5s"},
		{"", "idle", "idle timeout: server.idle_timeout 5s"},
		{"client", "idle", "the client's idle timeout: client.idle_timeout 1s"},
		{"client", "too_many_idle", "the idle pool was full: client.max_idle"},
		{"client", "end", "the run ended"},
	} {
		if got := r.reasonText(c.who, c.reason); got != c.want {
			t.Errorf("%s/%s: %q, want %q", c.who, c.reason, got, c.want)
		}
	}
}
