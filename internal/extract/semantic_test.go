package extract

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// halfAnswer is a worse model: claims only for sentences with an even
// number of bytes, nothing for the others.
func halfAnswer(r chatReq) (string, error) {
	if len(target(r))%2 == 1 {
		return `{"claims":[]}`, nil
	}
	return echoAnswer(r)
}

func TestRunSemantic(t *testing.T) {
	prod := newFake(t, echoAnswer)
	good := newFake(t, echoAnswer)
	bad := newFake(t, halfAnswer)
	cache := t.TempDir()
	params := func(cand *fakeServer, name string) SemanticParams {
		return SemanticParams{
			CorpusDir:             miniDir,
			Candidate:             Target{Backend: name, BaseURL: cand.URL, Model: "cand-model"},
			Production:            Target{Backend: "prod", BaseURL: prod.URL, Model: "prod-model"},
			ProductionFingerprint: "artifact-digest+profile-hash",
			WorkDir:               t.TempDir(),
			CacheDir:              cache,
			Floors:                Floors{MinF1: 0.1, MinGrounding: 0.9, MinSchemaValid: 0.9},
			Tolerance:             0.02,
			Concurrency:           2,
		}
	}
	r, err := RunSemantic(context.Background(), params(good, "good"))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Passed || len(r.Reasons) != 0 || r.ProductionCached || len(r.Differences) != 5 {
		t.Fatalf("an equal candidate must pass: %+v", r)
	}
	if r.Candidate.Report.Overall.F1 != r.Production.Report.Overall.F1 || r.Production.Fingerprint == nil {
		t.Errorf("same model, different scores: %+v", r)
	}
	prodRequests := prod.count()
	r, err = RunSemantic(context.Background(), params(bad, "bad"))
	if err != nil {
		t.Fatal(err)
	}
	if !r.ProductionCached || prod.count() != prodRequests {
		t.Errorf("production must be reused from the cache: cached %v, %d new requests", r.ProductionCached, prod.count()-prodRequests)
	}
	if r.Passed || !strings.Contains(strings.Join(r.Reasons, "\n"), "f1 vs production") {
		t.Errorf("a worse candidate must fail on f1 vs production: %+v", r.Reasons)
	}
	var worse bool
	for _, d := range r.Differences {
		if d.DeltaF1 < 0 && d.CandidateClaims < d.ProductionClaims {
			worse = true
		}
	}
	if !worse {
		t.Errorf("differences do not show the worse documents: %+v", r.Differences)
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatal(err)
	}
	// Another production fingerprint is not served from the cache.
	p := params(good, "good")
	p.ProductionFingerprint = "another-artifact"
	r, err = RunSemantic(context.Background(), p)
	if err != nil || r.ProductionCached || prod.count() == prodRequests {
		t.Errorf("changed fingerprint: err %v cached %v", err, r.ProductionCached)
	}
}

func TestRunSemanticProductionDown(t *testing.T) {
	prod := newFake(t, func(chatReq) (string, error) { return "", fakeError{503} })
	cand := newFake(t, echoAnswer)
	_, err := RunSemantic(context.Background(), SemanticParams{
		CorpusDir: miniDir, WorkDir: t.TempDir(), CacheDir: t.TempDir(),
		Candidate:  Target{Backend: "c", BaseURL: cand.URL, Model: "m"},
		Production: Target{Backend: "p", BaseURL: prod.URL, Model: "m"},
	})
	if err == nil || !strings.Contains(err.Error(), "production extraction incomplete") {
		t.Errorf("err = %v", err)
	}
}
