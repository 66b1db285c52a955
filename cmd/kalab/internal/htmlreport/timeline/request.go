package timeline

import "github.com/kalab-dev/kalab/engine/report"

// Request is a request line with the phase fields it carries, whatever their names.
type Request struct {
	report.Request
	// Extra holds numeric *_ms fields the report does not know by name (phases added by
	// a newer kalab), in the order the line had them.
	Extra []Field
}

// Field is a named number.
type Field struct {
	Name  string
	Value float64
}
