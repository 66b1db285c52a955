package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/kalab-dev/kalab/engine/atomicfile"
	"github.com/kalab-dev/kalab/schema"
)

var (
	resultOnce             sync.Once
	resultLine, requestDef *jsonschema.Schema
	connectionDef          *jsonschema.Schema
	resultErr              error
)

func resultSchemas() (*jsonschema.Schema, *jsonschema.Schema, error) {
	resultOnce.Do(func() {
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.AssertFormat()
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema.Result))
		if err == nil {
			err = c.AddResource(schema.ResultURL, doc)
		}
		if resultErr = err; resultErr != nil {
			return
		}
		if resultLine, resultErr = c.Compile(schema.ResultURL); resultErr != nil {
			return
		}
		if requestDef, resultErr = c.Compile(schema.ResultURL + "#/$defs/request"); resultErr != nil {
			return
		}
		connectionDef, resultErr = c.Compile(schema.ResultURL + "#/$defs/connection")
	})
	return resultLine, requestDef, resultErr
}

// validateFile checks every line of a results.jsonl (requests=false) or a request file
// (requests=true) against schema/result.schema.json; the error names the first bad line.
func validateFile(path string, requests bool) (lines int, err error) {
	line, req, err := resultSchemas()
	if err != nil {
		return 0, err
	}
	s := line
	if requests {
		s = req
	}
	return validateLines(path, s)
}

// ValidateResults checks every line of a results.jsonl against schema/result.schema.json;
// the error, "path:line: what is wrong", names the first bad line.
func ValidateResults(path string) error {
	_, err := validateFile(path, false)
	return err
}

// validateConnectionsFile checks every line of a connection file against
// #/$defs/connection.
func validateConnectionsFile(path string) (lines int, err error) {
	if _, _, err := resultSchemas(); err != nil {
		return 0, err
	}
	return validateLines(path, connectionDef)
}

func validateLines(path string, s *jsonschema.Schema) (lines int, err error) {
	f, err := atomicfile.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }() // read only: a failed close loses nothing
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		lines++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue // as Read does
		}
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return lines, fmt.Errorf("%s:%d: %v", path, lines, err)
		}
		if err := s.Validate(v); err != nil {
			return lines, fmt.Errorf("%s:%d: %v", path, lines, err)
		}
	}
	return lines, sc.Err()
}

// ValidateRunDir validates results.jsonl and every request and connection file under a
// run directory.
func ValidateRunDir(dir string) error {
	if _, err := validateFile(filepath.Join(dir, "results.jsonl"), false); err != nil {
		return err
	}
	walk := func(sub string, validate func(string) (int, error)) error {
		return filepath.WalkDir(filepath.Join(dir, sub), func(p string, d os.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			if !d.IsDir() {
				_, err = validate(p)
			}
			return err
		})
	}
	if err := walk("requests", func(p string) (int, error) { return validateFile(p, true) }); err != nil {
		return err
	}
	return walk("connections", validateConnectionsFile)
}
