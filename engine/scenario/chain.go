package scenario

import (
	"encoding/json"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kalab-dev/kalab/engine/scenario/internal/yamldoc"
)

// MaxMiddleboxes is the most boxes a middlebox list may chain.
const MaxMiddleboxes = 5

// Middleboxes lists the boxes on the client's path in order from the client: the list the
// file gave, its one box, or none.
func (s Settings) Middleboxes() []*Middlebox {
	switch {
	case len(s.MiddleboxChain) > 0:
		return s.MiddleboxChain
	case s.Middlebox != nil:
		return []*Middlebox{s.Middlebox}
	}
	return nil
}

// MiddleboxPath is the settings path of box i of n: middlebox for a lone box, middlebox[i]
// in a chain (as the schema's diagnostics name an item).
func MiddleboxPath(i, n int) string {
	if n <= 1 {
		return "middlebox"
	}
	return "middlebox[" + strconv.Itoa(i) + "]"
}

// MarshalJSON writes the settings as their fields do, except that a chain of boxes is
// written as the list under middlebox (a lone box stays the object it always was).
func (s Settings) MarshalJSON() ([]byte, error) {
	type plain Settings
	if len(s.MiddleboxChain) < 2 {
		return json.Marshal(plain(s))
	}
	return json.Marshal(struct {
		plain
		Middlebox []*Middlebox `json:"middlebox"`
	}{plain(s), s.MiddleboxChain})
}

// decodeMiddleboxChain decodes a middlebox list: each box onto the defaults and its own
// preset. It returns node without its middlebox key (so that the settings' own decode
// leaves the boxes alone) and false when a box does not decode.
func (l *loader) decodeMiddleboxChain(node, list *yaml.Node, s *Settings) (*yaml.Node, bool) {
	var chain []*Middlebox
	for i, item := range list.Content {
		box := middleboxDefaults
		path := MiddleboxPath(i, len(list.Content))
		if _, p := yamldoc.Lookup(item, "preset"); p != nil {
			preset, ok := MiddleboxPresets[p.Value]
			if !ok {
				l.add(p, path+".preset", "unknown preset %q (known: %s)", p.Value, strings.Join(PresetNames(MiddleboxPresets), ", "))
				return node, false
			}
			if err := preset.DecodeVersion("", &box); err != nil {
				l.add(p, path+".preset", "built-in preset %s: %v", p.Value, err)
				return node, false
			}
		}
		if err := item.Decode(&box); err != nil {
			l.decodeError(item, err)
			return node, false
		}
		chain = append(chain, &box)
	}
	if len(chain) > 0 {
		s.Middlebox = chain[0]
	}
	if len(chain) > 1 {
		s.MiddleboxChain = chain
	}
	rest := *yamldoc.Resolve(node)
	rest.Content = nil
	for i := 0; i+1 < len(node.Content); i += 2 {
		if node.Content[i].Value != "middlebox" {
			rest.Content = append(rest.Content, node.Content[i], node.Content[i+1])
		}
	}
	return &rest, true
}

// child is a mapping's value at key, or for key[i] item i of the list there; nil when there
// is none.
func child(n *yaml.Node, part string) *yaml.Node {
	key, index, indexed := strings.Cut(strings.TrimSuffix(part, "]"), "[")
	_, v := yamldoc.Lookup(n, key)
	if !indexed || v == nil {
		return v
	}
	v = yamldoc.Resolve(v)
	if i, err := strconv.Atoi(index); err == nil && v.Kind == yaml.SequenceNode && i >= 0 && i < len(v.Content) {
		return v.Content[i]
	}
	return nil
}

// checkChain refuses what a chain of boxes cannot do: HTTP/3's datagram boxes (and their
// replay_first_flight) stand alone on the path, and a chain holds at most MaxMiddleboxes.
func (l *loader) checkChain(r *Run, at func(string) *yaml.Node, where string) {
	n := len(r.Settings.MiddleboxChain)
	if n < 2 {
		return
	}
	if r.Settings.Server.HTTP3() {
		l.add(at("middlebox"), "middlebox", "a chain of %d boxes is modelled for TCP flows only; over HTTP/3 give one box%s", n, where)
	}
	if n > MaxMiddleboxes {
		l.add(at("middlebox"), "middlebox", "a chain of %d boxes is more than the %d kalab runs%s", n, MaxMiddleboxes, where)
	}
}

// checkChainOverlay refuses what would turn a middlebox list into one box unseen: a
// variant's middlebox mapping over the file's list (a mapping merges field by field into
// one object, which a list has not), and a matrix axis over middlebox.<field> where the run's
// middlebox is a list. A variant's list replaces the file's whole.
func (l *loader) checkChainOverlay(base, variant *yaml.Node, axes []matrixAxis) bool {
	isList := func(n *yaml.Node) bool {
		_, m := yamldoc.Lookup(n, "middlebox")
		m = yamldoc.Resolve(m)
		return m != nil && m.Kind == yaml.SequenceNode
	}
	_, vm := yamldoc.Lookup(variant, "middlebox")
	if vm = yamldoc.Resolve(vm); vm != nil && vm.Kind == yaml.MappingNode && isList(base) {
		l.add(vm, "middlebox", "the file's middlebox is a list (a chain of boxes), which a variant's one box cannot merge into; give the variant's middlebox as a list: it replaces the file's whole")
		return false
	}
	if !isList(base) && !isList(variant) {
		return true
	}
	for _, ax := range axes {
		if ax.path[0] == "middlebox" {
			_, m := yamldoc.Lookup(l.root, "matrix")
			k, _ := yamldoc.Lookup(m, strings.Join(ax.path, "."))
			l.add(k, "matrix", "a matrix cannot vary %s: the run's middlebox is a list (a chain of boxes); write the chains as variants", strings.Join(ax.path, "."))
			return false
		}
	}
	return true
}
