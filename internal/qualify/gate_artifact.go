package qualify

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hiro-dev/hiro/internal/artifact"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/shellquote"
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
	// else the directory hiro artifact verify uses (the manifest's own
	// folder when it holds the manifest's files, else the directory the
	// manifest records).
	Dir string `toml:"dir"`

	// dirFrom says where Dir came from, for the drift message.
	dirFrom string
}

// Validate resolves the manifest and directory and checks, before
// anything runs, that the manifest parses and the directory exists.
func (g *ArtifactGate) Validate(v *Validation) {
	cand := v.CandidateProfile()
	if g.Manifest == "" && cand == nil {
		return // the unknown candidate is reported once, under "candidate"
	}
	if g.Dir != "" {
		g.Dir, g.dirFrom = v.Resolve(g.Dir), "the gate's dir"
	}
	fromProfile := g.Manifest == ""
	if fromProfile {
		g.Manifest = cand.Artifact
		if g.Dir == "" && cand.ArtifactDir != "" {
			g.Dir, g.dirFrom = cand.ArtifactDir, "the profile's artifact_dir"
		}
		if g.Manifest == "" {
			v.Errorf("manifest", "missing, and the candidate profile names no artifact; set manifest = \"path/to/manifest.json\" or the profile's artifact")
			return
		}
	} else {
		g.Manifest = v.Resolve(g.Manifest)
	}
	m, err := artifact.Load(g.Manifest)
	if err != nil {
		// A missing manifest's error already says to pin one: the key
		// adds only where the path came from (trial 10 Q5: "pin" twice).
		missing := errors.Is(err, fs.ErrNotExist)
		switch {
		case v.Spec.Skip:
		case fromProfile && missing:
			v.ConfigErrorf("backends."+cand.Name+".artifact", "%v; or fix the profile's artifact path, which the artifact gate checks", err)
		case missing:
			v.Errorf("manifest", "%v; or point manifest at another manifest.json", err)
		case fromProfile:
			// The user wrote the path in the profile, not in the plan.
			v.ConfigErrorf("backends."+cand.Name+".artifact", "%v; pin the artifact first (hiro artifact pin) or fix the profile's artifact (the artifact gate checks it)", err)
		default:
			v.Errorf("manifest", "%v; pin the artifact first (hiro artifact pin) or point manifest at its manifest.json", err)
		}
		return
	}
	if g.Dir == "" {
		// The directory hiro artifact verify MANIFEST checks.
		g.Dir = m.DirFor(g.Manifest)
		g.dirFrom = "the directory the manifest records"
		if g.Dir == filepath.Dir(g.Manifest) {
			g.dirFrom = "the manifest's own folder"
		}
		if g.Dir == "" {
			if !v.Spec.Skip {
				v.Errorf("dir", "missing, and the manifest %s records no directory; set dir = \"path/to/model\" (or the profile's artifact_dir)", g.Manifest)
			}
			return
		}
	}
	if v.Spec.Skip {
		return
	}
	if st, err := os.Stat(g.Dir); err != nil || !st.IsDir() {
		v.Errorf("dir", "%s (%s) is not a directory; point dir (or the profile's artifact_dir) at the model's files", shellquote.Quote(g.Dir), g.dirFrom)
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
		from := ""
		if g.dirFrom != "" {
			from = " (" + g.dirFrom + ")"
		}
		return fmt.Errorf("artifact drift in %s%s: %s", shellquote.Quote(filepath.Clean(rep.Dir)), from, rep.DriftCounts())
	}
	return nil
}
