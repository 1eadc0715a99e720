package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/testsupport"
)

// 'hiro qualify PLAN --check' on the seed replay with the seed host's
// recorded facts predicts every attempt, starting and stopping nothing:
// the V2 runner under WSL2 is a predicted failure; the V1 variants
// cannot be sized (the replay's artifact has no layer counts) and would
// be launched.
func TestQualifyCheckPredictsTheLadder(t *testing.T) {
	// The replay as a fresh clone lays it out, with the fake engine
	// where scripts/build.sh puts it.
	root := t.TempDir()
	dir := filepath.Join(root, "examples", "seed-replay")
	must(t, os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "examples", "seed-replay"))))
	must(t, os.CopyFS(filepath.Join(root, "corpora", "hiro-mini"), os.DirFS(filepath.Join("..", "..", "corpora", "hiro-mini"))))
	must(t, os.MkdirAll(filepath.Join(root, ".bin"), 0o755))
	must(t, os.Symlink(testsupport.FakeEngine(t), filepath.Join(root, ".bin", "hiro-fake-engine")))
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"--config", filepath.Join(dir, "hiro.toml"), "qualify", filepath.Join(dir, "plan.toml"),
		"--check", "--host-facts", filepath.Join(dir, "seed-host.json")}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
	}
	for _, want := range []string{
		"preflight base: predicted failure (host_capability, rule vllm/v2-runner-needs-uva)",
		"preflight v1-runner: cannot predict: ",
		"preflight triton-w4a16: cannot predict: ",
		"host facts: the seed host's recorded facts",
		"is valid",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	code = Run(context.Background(), []string{"--config", filepath.Join(dir, "hiro.toml"), "qualify", filepath.Join(dir, "plan.toml"),
		"--check", "--json", "--host-facts", filepath.Join(dir, "seed-host.json")}, &out, &errb)
	var sum struct {
		OK          bool `json:"ok"`
		Predictions []struct {
			Attempt       string `json:"attempt"`
			Runs          bool   `json:"runs"`
			Rule          string `json:"rule"`
			CannotPredict string `json:"cannot_predict"`
		} `json:"predictions"`
	}
	if err := json.Unmarshal(out.Bytes(), &sum); code != 0 || err != nil || !sum.OK || len(sum.Predictions) != 3 {
		t.Fatalf("--json: exit %d, %v: %s", code, err, out.String())
	}
	if p := sum.Predictions[0]; p.Attempt != "base" || p.Runs || p.Rule != "vllm/v2-runner-needs-uva" {
		t.Errorf("base %+v", p)
	}
	if p := sum.Predictions[1]; p.Attempt != "v1-runner" || p.CannotPredict == "" {
		t.Errorf("v1-runner %+v", p)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
