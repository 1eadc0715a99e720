package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
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
	nb, _ := os.ReadFile(noisy)
	// stats.json as extract writes it: its claim count is the file's.
	os.WriteFile(filepath.Join(filepath.Dir(noisy), "stats.json"), []byte(fmt.Sprintf(`{"replies":10,"schema_valid_replies":9,"claims":%d}`, bytes.Count(nb, []byte("\n")))), 0o644)
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

// writeRun writes claims.jsonl with the gold claims of the documents in
// ids and progress.jsonl with a done record of each: a run (a shard) that
// extracted only those documents.
func writeRun(t *testing.T, c *corpus.Corpus, ids map[string]bool) string {
	dir := t.TempDir()
	var cb, pb bytes.Buffer
	for _, g := range c.Gold {
		if ids[g.DocID] {
			line, _ := json.Marshal(map[string]any{"doc_id": g.DocID, "sentence_index": g.SentenceIndex, "text": g.Text, "quote": strings.Fields(g.Text)[1]})
			cb.Write(append(line, '\n'))
		}
	}
	for i, d := range c.Docs {
		if ids[d.ID] {
			line, _ := json.Marshal(map[string]any{"doc_id": d.ID, "doc_index": i, "status": "done"})
			pb.Write(append(line, '\n'))
		}
	}
	os.WriteFile(filepath.Join(dir, "claims.jsonl"), cb.Bytes(), 0o644)
	os.WriteFile(filepath.Join(dir, ProgressFile), pb.Bytes(), 0o644)
	return filepath.Join(dir, "claims.jsonl")
}

// A shard's claims (one document of several) are not scored as if the
// other documents had been extracted with nothing: those are listed as
// missing and left out; --score-missing scores them as empty; a run with
// every document (what merge writes) scores as the unsharded run.
func TestEvaluatePartialRunReportsMissing(t *testing.T) {
	c, err := corpus.Load(miniDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Docs) < 2 {
		t.Skip("corpus has one document")
	}
	first := c.Docs[0].ID
	shard := writeRun(t, c, map[string]bool{first: true})
	r, err := EvaluateRun(miniDir, shard, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Missing) != len(c.Docs)-1 || len(r.Documents) != 1 || r.Documents[0].DocID != first {
		t.Fatalf("missing %v, documents %d", r.Missing, len(r.Documents))
	}
	if r.Overall.Coverage != 1 {
		t.Errorf("the shard's own document is fully covered, overall coverage %v", r.Overall.Coverage)
	}
	if txt := Text(r); !strings.Contains(txt, "missing: ") || !strings.Contains(txt, r.Missing[0]) {
		t.Errorf("text report does not list the missing documents:\n%s", txt)
	}
	r, err = EvaluateRun(miniDir, shard, Options{ScoreMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Documents) != len(c.Docs) || r.Overall.Coverage >= 1 || len(r.Missing) != len(c.Docs)-1 {
		t.Errorf("--score-missing: documents %d, coverage %v, missing %v", len(r.Documents), r.Overall.Coverage, r.Missing)
	}
	all := map[string]bool{}
	for _, d := range c.Docs {
		all[d.ID] = true
	}
	merged, _ := EvaluateRun(miniDir, writeRun(t, c, all), Options{})
	unsharded, _ := EvaluateFiles(miniDir, writeClaims(t, c), 0)
	merged.ClaimsSHA256, unsharded.ClaimsSHA256 = "", ""
	a, _ := Marshal(merged)
	b, _ := Marshal(unsharded)
	if !bytes.Equal(a, b) {
		t.Errorf("a run with every document scores differently from the unsharded claims:\n%s\n%s", a, b)
	}
}
