package server

import (
	"cmp"
	"slices"
	"time"
)

// Who closed a connection, as ConnRecord.ClosedBy says it.
const (
	CloseByServer = "server"
	CloseByClient = "client"
)

// Why a connection closed, as ConnRecord.Reason says it.
const (
	ReasonIdle        = "idle"         // the server's idle timeout
	ReasonMaxRequests = "max_requests" // the last response MaxRequests allows carried "Connection: close"
	ReasonCloseEvery  = "close_every"  // CloseEvery put "Connection: close" on a response
	ReasonRequested   = "requested"    // the request asked for "Connection: close"
	ReasonEnd         = "end"          // the server shut down at the end of the run
	ReasonUnknown     = "unknown"      // the peer closed it; the server cannot see why
)

// ConnRecord is one connection as the server saw it.
type ConnRecord struct {
	ID       uint64    // the server's id, also sent in ConnHeader; 1-based in accept order
	Opened   time.Time // when the connection was accepted
	Closed   time.Time // zero while open
	ClosedBy string    // CloseByServer or CloseByClient; "" while open
	Reason   string    // one of the Reason constants; "" while open
	Requests int64     // requests the handler saw on it
}

// Conns returns every connection the server accepted, closed ones with their close
// time, who closed them and why, ordered by ID.
func (s *Server) Conns() []ConnRecord {
	s.histMu.Lock()
	out := slices.Clone(s.closed)
	s.histMu.Unlock()
	s.conns.Range(func(_, v any) bool {
		ci := v.(*connInfo)
		out = append(out, ConnRecord{ID: uint64(ci.id), Opened: ci.opened, Requests: ci.requests.Load()})
		return true
	})
	slices.SortFunc(out, func(a, b ConnRecord) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// ConnClosed returns the record of connection id if it has closed.
func (s *Server) ConnClosed(id uint64) (ConnRecord, bool) {
	s.histMu.Lock()
	defer s.histMu.Unlock()
	if i, ok := s.closedAt[id]; ok {
		return s.closed[i], true
	}
	return ConnRecord{}, false
}
