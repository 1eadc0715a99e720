package artifact_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hiro-dev/hiro/internal/artifact"
)

// Pin a directory, store the manifest, then verify the directory the way the
// qualification artifact gate does: OK, the drift lists, and the digest the
// evidence records.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "model")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type":"mistral"}`), 0o644)
	os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte("weights"), 0o644)

	m, err := artifact.Pin(ctx, dir, "acme/tiny", "49ec31ec0975e46a1aeef24186a45f11be3042b8", artifact.PinOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	manifest := filepath.Join(dir, "hiro-artifact.json") // ignored by Verify
	if err := artifact.Write(manifest, m); err != nil {
		fmt.Println(err)
		return
	}

	os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte("WEIGHTS"), 0o644)
	r, err := artifact.Verify(ctx, manifest, dir, artifact.VerifyOptions{})
	if err != nil {
		fmt.Println(err) // the check could not be made
		return
	}
	fmt.Println(r.OK, r.Digest == m.Digest, r.Changed[0].Path, r.Changed[0].Reason)

	_, err = artifact.Pin(ctx, dir, "acme/tiny", "main", artifact.PinOptions{})
	fmt.Println(err)
	// Output:
	// false true model.safetensors sha256
	// bad revision: "main" looks like a branch or tag name, which can move; pin the full 40-hex commit it points at now (on the Hugging Face hub: the commit list of the repository, or the snapshot directory name in the cache)
}
