package qualify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/doctor"
	"github.com/hiro-dev/hiro/internal/evidence"
)

// EnvironmentOf is the environment a candidate would run in now: the
// SHA-256 of its engine's executable (its command, found on PATH), and the
// first GPU's model, driver and CUDA version as nvidia-smi reports them
// (empty without one). The campaign records it in its fingerprints;
// 'hiro activate' computes it again and refuses on a difference, naming
// the field.
func EnvironmentOf(ctx context.Context, candidate *config.Profile) *evidence.Environment {
	env := &evidence.Environment{}
	if candidate != nil && candidate.Command != "" {
		env.EngineBuild = executableDigest(candidate.Command)
	}
	if gpus, _ := doctor.Accelerators(ctx, doctor.Options{}); len(gpus) > 0 {
		env.GPUModel, env.Driver, env.CUDARuntime = gpus[0].Name, gpus[0].Driver, gpus[0].CUDA
	}
	return env
}

// executableDigest is "sha256:<hex>" of the file command resolves to, or
// "" when it cannot be found or read.
func executableDigest(command string) string {
	path, err := exec.LookPath(command)
	if err != nil {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
