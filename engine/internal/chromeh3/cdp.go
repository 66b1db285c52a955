package chromeh3

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// cdp is a DevTools protocol connection over Chromium's --remote-debugging-pipe: commands
// go to the browser's descriptor 3, replies and events come back on its descriptor 4, each
// message one JSON object ended by a NUL byte. Commands for a page carry the session id
// that Target.attachToTarget (flatten) gave.
type cdp struct {
	w io.WriteCloser

	mu      sync.Mutex
	next    int64
	pending map[int64]chan reply
	gone    error // set when the read side ends: every later call fails with it
	onEvent func(method, session string, params json.RawMessage)
	done    chan struct{}
}

// reply is the answer to one command.
type reply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// message is what the browser writes: a reply (with an id) or an event (with a method).
type message struct {
	ID        int64           `json:"id"`
	Method    string          `json:"method"`
	SessionID string          `json:"sessionId"`
	Params    json.RawMessage `json:"params"`
	reply
}

// newCDP starts reading r; onEvent is called, from the reading goroutine, for each event.
func newCDP(w io.WriteCloser, r io.Reader, onEvent func(method, session string, params json.RawMessage)) *cdp {
	c := &cdp{w: w, pending: map[int64]chan reply{}, onEvent: onEvent, done: make(chan struct{})}
	go c.read(r)
	return c
}

// read hands each message to its waiting call or to onEvent, until the pipe ends.
func (c *cdp) read(r io.Reader) {
	defer close(c.done)
	br := bufio.NewReaderSize(r, 1<<16)
	var err error
	for {
		var raw []byte
		if raw, err = br.ReadBytes(0); err != nil {
			break
		}
		var m message
		if err = json.Unmarshal(raw[:len(raw)-1], &m); err != nil {
			err = fmt.Errorf("a DevTools message is not JSON: %w", err)
			break
		}
		if m.ID == 0 {
			c.onEvent(m.Method, m.SessionID, m.Params)
			continue
		}
		c.mu.Lock()
		ch := c.pending[m.ID]
		delete(c.pending, m.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- m.reply
		}
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("the DevTools pipe closed: Chromium exited")
	}
	c.mu.Lock()
	c.gone = err
	c.pending = map[int64]chan reply{}
	c.mu.Unlock()
}

// call sends a command (to the page of session, or to the browser when session is empty)
// and decodes its result into out, if out is not nil.
func (c *cdp) call(ctx context.Context, session, method string, params, out any) error {
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.gone != nil {
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, c.gone)
	}
	c.next++
	id := c.next
	c.pending[id] = ch
	c.mu.Unlock()
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if _, err := c.w.Write(append(b, 0)); err != nil {
		return fmt.Errorf("%s: writing to Chromium: %w", method, err)
	}
	select {
	case r := <-ch:
		return decode(method, r, out)
	case <-c.done:
		select {
		case r := <-ch: // the reply came just before the pipe ended
			return decode(method, r, out)
		default:
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, c.gone)
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// decode turns a reply into an error or its result, decoded into out (when not nil).
func decode(method string, r reply, out any) error {
	if r.Error != nil {
		return fmt.Errorf("%s: %s (%d)", method, r.Error.Message, r.Error.Code)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(r.Result, out); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}
