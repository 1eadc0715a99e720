package engine

import (
	"math/rand"
	"strings"
	"testing"
)

// The automaton finds exactly the patterns strings.Contains finds.
func TestACMatchesContains(t *testing.T) {
	pats := []string{"he", "she", "his", "hers", "error", "rror:", "out of memory", "memory", "a", "aa", "", "cuda"}
	bs := make([][]byte, len(pats))
	for i, p := range pats {
		bs[i] = []byte(p)
	}
	m := newAC(bs)
	r := rand.New(rand.NewSource(1))
	alpha := "hersiaout fmycdrl:"
	for n := 0; n < 2000; n++ {
		var sb strings.Builder
		for i := r.Intn(40); i > 0; i-- {
			sb.WriteByte(alpha[r.Intn(len(alpha))])
		}
		text := sb.String()
		got := map[int32]bool{}
		m.scan([]byte(text), func(id int32) { got[id] = true })
		for i, p := range pats {
			if want := p != "" && strings.Contains(text, p); got[int32(i)] != want {
				t.Fatalf("%q in %q: got %v want %v", p, text, got[int32(i)], want)
			}
		}
	}
}
