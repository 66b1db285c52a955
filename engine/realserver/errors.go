package realserver

import "fmt"

// FieldError says that a real server cannot express one setting of Config. Field names the
// Config field (IdleTimeout, Delay, ...), so the caller can point at where it was set.
type FieldError struct {
	Kind  Kind
	Field string
	Msg   string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s cannot express %s: %s", e.Kind, e.Field, e.Msg)
}

func unsupported(k Kind, field, format string, args ...any) error {
	return &FieldError{Kind: k, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// IdentityError says that what answered on the server's port is not the program kalab
// started: its answer is not the one that program gives.
type IdentityError struct {
	Kind Kind
	Addr string
	Msg  string // what answered, and what was expected
}

func (e *IdentityError) Error() string {
	return fmt.Sprintf("what answers on %s is not %s: %s", e.Addr, e.Kind, e.Msg)
}
