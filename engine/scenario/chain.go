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
func (s Settings) Middleboxes() []*Middlebox { return listOrOne(s.MiddleboxChain, s.Middlebox) }

// listOrOne is a chain's list, or its one item as a list of one, or nil.
func listOrOne[T any](list []*T, one *T) []*T {
	switch {
	case len(list) > 0:
		return list
	case one != nil:
		return []*T{one}
	}
	return nil
}

// MiddleboxPath is the settings path of box i of n: middlebox for a lone box, middlebox[i]
// in a chain (as the schema's diagnostics name an item).
func MiddleboxPath(i, n int) string { return itemPath("middlebox", i, n) }

// itemPath is the settings path of item i of a list of n under key: key for a lone item,
// key[i] in a chain.
func itemPath(key string, i, n int) string {
	if n <= 1 {
		return key
	}
	return key + "[" + strconv.Itoa(i) + "]"
}

// MaxBalancers is the most balancers a balancer list may chain.
const MaxBalancers = 4

// Balancers lists the balancers on the path in order from the client: the list the file
// gave, its one balancer, or none. Each balancer's backend pool dials the next one; the
// last one's dials the server.
func (s Settings) Balancers() []*Balancer { return listOrOne(s.BalancerChain, s.Balancer) }

// ServerBalancer is the balancer in front of the server: the last of a chain, the one
// balancer, or nil. Its pool holds the server's connections, and a deregistration
// (server.events deregister) takes the server out of it.
func (s Settings) ServerBalancer() *Balancer {
	if bs := s.Balancers(); len(bs) > 0 {
		return bs[len(bs)-1]
	}
	return nil
}

// BalancerPath is the settings path of balancer i of n: balancer for a lone one,
// balancer[i] in a chain.
func BalancerPath(i, n int) string { return itemPath("balancer", i, n) }

// MarshalJSON writes the settings as their fields do, except that a chain of boxes or of
// balancers is written as the list under its key (a lone one stays the object it always
// was).
func (s Settings) MarshalJSON() ([]byte, error) {
	type plain Settings
	return json.Marshal(struct {
		plain
		Middlebox any `json:"middlebox,omitempty"`
		Balancer  any `json:"balancer,omitempty"`
	}{plain(s), asWritten(s.MiddleboxChain, s.Middlebox), asWritten(s.BalancerChain, s.Balancer)})
}

// asWritten is list when it holds a chain, else the lone value (nil when there is none).
func asWritten[T any](list []*T, one *T) any {
	switch {
	case len(list) > 1:
		return list
	case one != nil:
		return one
	}
	return nil
}

// decodeChain decodes a list under key (middlebox or balancer): each item onto the
// defaults and its own preset, in path order. It returns node without key (so that the
// settings' own decode leaves the items alone) and false when an item does not decode.
func decodeChain[T any](l *loader, node, list *yaml.Node, key string, defaults T, reg map[string]*Preset) (*yaml.Node, []*T, bool) {
	var chain []*T
	for i, item := range list.Content {
		v := defaults
		path := itemPath(key, i, len(list.Content))
		if _, p := yamldoc.Lookup(item, "preset"); p != nil {
			preset, ok := reg[p.Value]
			if !ok {
				l.add(p, path+".preset", "unknown preset %q (known: %s)", p.Value, strings.Join(PresetNames(reg), ", "))
				return node, nil, false
			}
			if err := preset.DecodeVersion("", &v); err != nil {
				l.add(p, path+".preset", "built-in preset %s: %v", p.Value, err)
				return node, nil, false
			}
		}
		if err := item.Decode(&v); err != nil {
			l.decodeError(item, err)
			return node, nil, false
		}
		chain = append(chain, &v)
	}
	rest := *yamldoc.Resolve(node)
	rest.Content = nil
	for i := 0; i+1 < len(node.Content); i += 2 {
		if node.Content[i].Value != key {
			rest.Content = append(rest.Content, node.Content[i], node.Content[i+1])
		}
	}
	return &rest, chain, true
}

// decodeMiddleboxChain decodes a middlebox list (decodeChain) into s.
func (l *loader) decodeMiddleboxChain(node, list *yaml.Node, s *Settings) (*yaml.Node, bool) {
	rest, chain, ok := decodeChain(l, node, list, "middlebox", middleboxDefaults, MiddleboxPresets)
	if ok && len(chain) > 0 {
		s.Middlebox = chain[0]
	}
	if len(chain) > 1 {
		s.MiddleboxChain = chain
	}
	return rest, ok
}

// decodeBalancerChain decodes a balancer list (decodeChain) into s.
func (l *loader) decodeBalancerChain(node, list *yaml.Node, s *Settings) (*yaml.Node, bool) {
	rest, chain, ok := decodeChain(l, node, list, "balancer", balancerDefaults, BalancerPresets)
	if ok && len(chain) > 0 {
		s.Balancer = chain[0]
	}
	if len(chain) > 1 {
		s.BalancerChain = chain
	}
	return rest, ok
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

// checkChain refuses what a chain cannot do: HTTP/3's datagram boxes (and their
// replay_first_flight) stand alone on the path, a chain holds at most MaxMiddleboxes boxes
// and MaxBalancers balancers.
func (l *loader) checkChain(r *Run, at func(string) *yaml.Node, where string) {
	n := len(r.Settings.MiddleboxChain)
	if n >= 2 && r.Settings.Server.HTTP3() {
		l.add(at("middlebox"), "middlebox", "a chain of %d boxes is modelled for TCP flows only; over HTTP/3 give one box%s", n, where)
	}
	if n > MaxMiddleboxes {
		l.add(at("middlebox"), "middlebox", "a chain of %d boxes is more than the %d kalab runs%s", n, MaxMiddleboxes, where)
	}
	if n := len(r.Settings.BalancerChain); n > MaxBalancers {
		l.add(at("balancer"), "balancer", "a chain of %d balancers is more than the %d kalab runs%s", n, MaxBalancers, where)
	}
}

// checkChainOverlay refuses what would turn a middlebox or balancer list into one item
// unseen: a variant's mapping over the file's list (a mapping merges field by field into
// one object, which a list has not), and a matrix axis over <key>.<field> where the run's
// <key> is a list. A variant's list replaces the file's whole.
func (l *loader) checkChainOverlay(base, variant *yaml.Node, axes []matrixAxis) bool {
	for _, key := range []string{"middlebox", "balancer"} {
		if !l.chainOverlay(key, base, variant, axes) {
			return false
		}
	}
	return true
}

func (l *loader) chainOverlay(key string, base, variant *yaml.Node, axes []matrixAxis) bool {
	what := map[string]string{"middlebox": "a chain of boxes", "balancer": "a chain of balancers"}[key]
	isList := func(n *yaml.Node) bool {
		_, m := yamldoc.Lookup(n, key)
		m = yamldoc.Resolve(m)
		return m != nil && m.Kind == yaml.SequenceNode
	}
	_, vm := yamldoc.Lookup(variant, key)
	if vm = yamldoc.Resolve(vm); vm != nil && vm.Kind == yaml.MappingNode && isList(base) {
		l.add(vm, key, "the file's %s is a list (%s), which a variant's one %s cannot merge into; give the variant's %s as a list: it replaces the file's whole", key, what, key, key)
		return false
	}
	if !isList(base) && !isList(variant) {
		return true
	}
	for _, ax := range axes {
		if ax.path[0] == key {
			_, m := yamldoc.Lookup(l.root, "matrix")
			k, _ := yamldoc.Lookup(m, strings.Join(ax.path, "."))
			l.add(k, "matrix", "a matrix cannot vary %s: the run's %s is a list (%s); write the chains as variants", strings.Join(ax.path, "."), key, what)
			return false
		}
	}
	return true
}

// ownPolicy are the balancer fields a real balancer (exec) decides itself: its retry policy,
// its error status, how it shares backend connections and which idle one it takes.
var ownPolicy = []string{"on_backend_error", "retries", "error_status", "reuse", "backend.scheduling",
	"backend.liveness_check", "backend.max_conns", "backend.timeout", "deregistration_delay"}

// checkRealBalancers refuses, for each balancer that is a real program, a field the file
// sets that the program decides itself (kalab would not configure it, and the run would
// claim a setting that did not apply), and a deregistration from a real balancer in front
// of the server (kalab cannot take a server out of a real program's pool).
func (l *loader) checkRealBalancers(r *Run, at func(string) *yaml.Node, where string) {
	bs := r.Settings.Balancers()
	for i, b := range bs {
		if !b.Real() {
			continue
		}
		path := BalancerPath(i, len(bs))
		for _, f := range ownPolicy {
			if _, _, set := r.Position(path + "." + f); set {
				l.add(at(path+"."+f), path+"."+f, "%s runs the real %s, whose own rules decide this (kalab writes only idle_timeout and the backend pool's keepalive, idle_timeout and max_idle into its configuration): remove it%s", path, b.Exec, where)
			}
		}
	}
	if last := r.Settings.ServerBalancer(); last.Real() {
		for _, e := range r.Settings.Server.Events {
			if e.Do == EventDeregister {
				l.add(at("server.events"), "server.events", "a deregistration takes the server out of the balancer in front of it, which here is the real %s: kalab cannot take a server out of a real program's pool%s", last.Exec, where)
				break
			}
		}
	}
}
