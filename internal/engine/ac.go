package engine

// acMatcher finds which of many literal patterns occur in a text in one
// pass: an Aho-Corasick automaton compiled to a DFA over byte classes
// (the bytes the patterns use, plus one class for every other byte). The
// tracker uses it so that a log line costs one scan, whatever the number
// of signatures and markers.
type acMatcher struct {
	class  [256]uint8 // byte → class; 0 is "no pattern uses this byte"
	nclass int
	delta  []int32   // state*nclass + class → next state
	out    [][]int32 // pattern ids that end at the state (fail chain merged)
}

// newAC builds the matcher; empty patterns are never reported.
func newAC(patterns [][]byte) *acMatcher {
	m := &acMatcher{nclass: 1}
	for _, p := range patterns {
		for _, b := range p {
			if m.class[b] == 0 {
				if m.nclass == 255 {
					panic("engine: too many distinct bytes in patterns")
				}
				m.class[b] = uint8(m.nclass)
				m.nclass++
			}
		}
	}
	// trie
	type node struct {
		next map[uint8]int32
	}
	trie := []node{{next: map[uint8]int32{}}}
	m.out = [][]int32{nil}
	for id, p := range patterns {
		if len(p) == 0 {
			continue
		}
		s := int32(0)
		for _, b := range p {
			c := m.class[b]
			nx, ok := trie[s].next[c]
			if !ok {
				nx = int32(len(trie))
				trie = append(trie, node{next: map[uint8]int32{}})
				m.out = append(m.out, nil)
				trie[s].next[c] = nx
			}
			s = nx
		}
		m.out[s] = append(m.out[s], int32(id))
	}
	// DFA, breadth first: a missing edge goes where the fail state goes.
	nc := m.nclass
	m.delta = make([]int32, len(trie)*nc)
	fail := make([]int32, len(trie))
	queue := []int32{0}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for c := 0; c < nc; c++ {
			nx, ok := trie[s].next[uint8(c)]
			if c == 0 {
				ok = false
			}
			switch {
			case ok:
				m.delta[int(s)*nc+c] = nx
				if s != 0 {
					fail[nx] = m.delta[int(fail[s])*nc+c]
				}
				m.out[nx] = append(m.out[nx], m.out[fail[nx]]...)
				queue = append(queue, nx)
			case s == 0:
				m.delta[c] = 0
			default:
				m.delta[int(s)*nc+c] = m.delta[int(fail[s])*nc+c]
			}
		}
	}
	return m
}

// scan calls hit for each pattern id found in text (an id may be
// reported more than once).
func (m *acMatcher) scan(text []byte, hit func(id int32)) {
	s := int32(0)
	nc := int32(m.nclass)
	for _, b := range text {
		s = m.delta[s*nc+int32(m.class[b])]
		if s != 0 {
			for _, id := range m.out[s] {
				hit(id)
			}
		}
	}
}
