package qualify

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hiro-dev/hiro/internal/artifact"
	"github.com/hiro-dev/hiro/internal/evidence"
)

// KindArtifact verifies the pinned model against its manifest.
const KindArtifact = "artifact"

func init() {
	RegisterKind(Kind{Name: KindArtifact, Rank: 20, Title: "Pinned artifact", New: func() Gate { return &ArtifactGate{} }})
}

// ArtifactGate is an artifact gate's section. Its result is an
// evidence.ArtifactResult.
type ArtifactGate struct {
	plainBound
	// Manifest is the manifest to verify (relative to the plan); default
	// the candidate profile's artifact.
	Manifest string `toml:"manifest"`
	// Dir is the artifact directory; default the profile's artifact_dir,
	// else the manifest's directory.
	Dir string `toml:"dir"`
}

// Validate resolves the manifest and directory and checks, before
// anything runs, that the manifest parses and the directory exists.
func (g *ArtifactGate) Validate(v *Validation) {
	cand := v.CandidateProfile()
	if g.Manifest == "" && cand == nil {
		return // the unknown candidate is reported once, under "candidate"
	}
	if g.Manifest == "" {
		g.Manifest = cand.Artifact
		if g.Dir == "" {
			g.Dir = cand.ArtifactDir
		}
		if g.Manifest == "" {
			v.Errorf("manifest", "missing, and the candidate profile names no artifact; set manifest = \"path/to/manifest.json\" or the profile's artifact")
			return
		}
	} else {
		g.Manifest = v.Resolve(g.Manifest)
		if g.Dir == "" {
			g.Dir = filepath.Dir(g.Manifest)
		}
	}
	g.Dir = v.Resolve(g.Dir)
	if v.Spec.Skip {
		return
	}
	if _, err := artifact.Load(g.Manifest); err != nil {
		v.Errorf("manifest", "%v; pin the artifact first (hiro artifact pin) or point manifest at its manifest.json", err)
	}
	if st, err := os.Stat(g.Dir); err != nil || !st.IsDir() {
		v.Errorf("dir", "%s is not a directory; point dir (or the profile's artifact_dir) at the model's files", g.Dir)
	}
}

// Fingerprint records the manifest's digest.
func (g *ArtifactGate) Fingerprint(fp *evidence.Fingerprints) {
	if g.Manifest == "" {
		return
	}
	if d, err := fileDigest(g.Manifest); err == nil {
		fp.ArtifactManifest = d
		fp.Files[g.Manifest] = d
	}
}

// Run verifies every file of the manifest; drift fails the gate.
func (g *ArtifactGate) Run(ctx context.Context, h *Handle, eg *evidence.Gate) error {
	rep, err := artifact.Verify(ctx, g.Manifest, g.Dir, artifact.VerifyOptions{})
	if err != nil {
		return fmt.Errorf("artifact verify: %v", err)
	}
	eg.Artifact = &evidence.ArtifactResult{
		Repo: rep.Repo, Revision: rep.Revision, ManifestDigest: rep.Digest,
		Files: rep.Files, Bytes: rep.Bytes, Hashed: rep.Hashed,
		Missing: rep.Missing, Changed: len(rep.Changed), Extra: rep.Extra,
		Paths: &evidence.ArtifactPaths{Manifest: g.Manifest, Dir: rep.Dir},
	}
	if rep.Digest != "" && h.Fingerprints != nil {
		h.Fingerprints.ArtifactManifest = rep.Digest
	}
	if !rep.OK {
		return fmt.Errorf("artifact drift: %s", rep.Summary())
	}
	return nil
}
