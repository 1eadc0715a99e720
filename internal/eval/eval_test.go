package eval

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/corpus"
)

var miniDir = filepath.Join("..", "..", "corpora", "hiro-mini")

func TestSimilarity(t *testing.T) {
	if s := Similarity("The bridge cost 310 million euros.", "The Halden Bridge cost 310 million euros"); s < 0.9 || s > 0.93 {
		t.Errorf("similar claims: %v", s)
	}
	if s := Similarity("The bridge is long", "The Halden Bridge cost 310 million euros"); s >= DefaultThreshold {
		t.Errorf("different claims score %v, at or above the threshold", s)
	}
	if Similarity("", "x") != 0 || Similarity("A b", "a  B.") != 1 {
		t.Error("empty or equal-after-normalisation claims")
	}
}

func TestMatchOneToOneDeterministic(t *testing.T) {
	gold := []string{"Paris is in France", "Paris is in France"}
	pred := []string{"Paris is in France", "Paris is in France", "Paris is in France"}
	ps := Match(pred, gold, 0.5)
	if len(ps) != 2 || ps[0] != (Pair{0, 0, 1}) || ps[1] != (Pair{1, 1, 1}) {
		t.Errorf("ties must break by predicted then gold index: %+v", ps)
	}
	// The best pair wins even when a worse one comes first in the files.
	ps = Match([]string{"Paris is a city in France", "Paris is in France"}, []string{"Paris is in France"}, 0.5)
	if len(ps) != 1 || ps[0].Pred != 1 {
		t.Errorf("greedy by best score: %+v", ps)
	}
}

// writeClaims writes a claims.jsonl from the gold claims of the corpus,
// plus the given extra lines.
func writeClaims(t *testing.T, c *corpus.Corpus, extra ...string) string {
	dir := t.TempDir()
	var b bytes.Buffer
	for _, g := range c.Gold {
		line, _ := json.Marshal(map[string]any{"doc_id": g.DocID, "sentence_index": g.SentenceIndex, "text": g.Text, "quote": strings.Fields(g.Text)[1]})
		b.Write(line)
		b.WriteByte('\n')
	}
	for _, e := range extra {
		b.WriteString(e + "\n")
	}
	p := filepath.Join(dir, "claims.jsonl")
	os.WriteFile(p, b.Bytes(), 0o644)
	return p
}

func TestEvaluateMini(t *testing.T) {
	c, err := corpus.Load(miniDir)
	if err != nil {
		t.Fatal(err)
	}
	perfect := writeClaims(t, c)
	r, err := EvaluateFiles(miniDir, perfect, 0)
	if err != nil {
		t.Fatal(err)
	}
	if o := r.Overall; o.Precision != 1 || o.Coverage != 1 || o.F1 != 1 || o.Duplicates != 0 || r.SchemaValidRate != nil {
		t.Errorf("gold scored against itself: %+v", r.Overall)
	}
	// One duplicate, one ungrounded invented claim, one gold claim dropped.
	noisy := writeClaims(t, c,
		`{"doc_id":"rivers","sentence_index":0,"text":"The Varda River is 412 kilometres long.","quote":"412 kilometres"}`,
		`{"doc_id":"rivers","sentence_index":0,"text":"Pigs can fly over the river.","quote":"pigs fly"}`)
	os.WriteFile(filepath.Join(filepath.Dir(noisy), "stats.json"), []byte(`{"replies":10,"schema_valid_replies":9,"claims":3}`), 0o644)
	r, err = EvaluateFiles(miniDir, noisy, 0)
	if err != nil {
		t.Fatal(err)
	}
	var rivers DocScores
	for _, d := range r.Documents {
		if d.DocID == "rivers" {
			rivers = d
		}
	}
	g := rivers.Gold
	if rivers.Predicted != g+2 || rivers.Matched != g || rivers.Duplicates != 1 || rivers.Grounded != g+1 || rivers.Coverage != 1 {
		t.Errorf("rivers scores %+v", rivers)
	}
	if r.SchemaValidRate == nil || *r.SchemaValidRate != 0.9 {
		t.Errorf("schema-valid rate from stats.json: %v", r.SchemaValidRate)
	}
	// Byte-identical JSON for the same inputs.
	a, _ := Marshal(r)
	r2, _ := EvaluateFiles(miniDir, noisy, 0)
	b, _ := Marshal(r2)
	if !bytes.Equal(a, b) {
		t.Error("two evaluations of the same inputs differ")
	}
	if !strings.Contains(Text(r), "overall") {
		t.Error("text report has no overall line")
	}
	bad := writeClaims(t, c, `{"doc_id":"not-in-corpus","text":"x y","quote":"x"}`)
	if _, err := EvaluateFiles(miniDir, bad, 0); err == nil || !strings.Contains(err.Error(), "not-in-corpus") {
		t.Errorf("claims for another corpus: err = %v", err)
	}
}
