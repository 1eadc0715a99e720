package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/signing"
)

func init() { registerCommand(newEvidenceCmd) }

func newEvidenceCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "evidence",
		Short: "Check a campaign's evidence",
		Args:  needArgs(0, 0, "", ""),
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "verify FILE|FOLDER",
		Short: "Verify a signature on evidence or a record, and whose key it is",
		Long: `Verify the Ed25519 signature embedded in FILE (public or private evidence, an
activation record, a journal's copy of evidence; a campaign's evidence folder
stands for the evidence.json in it, as 'hiro activate' takes it): it covers the canonical bytes
of the whole document without the signature (docs/reliability.md, "Signatures"), so any edit after
signing breaks it. The document carries its signer's public key: anyone can
verify it with this command alone, and the output says whether the key is in
your trust list ('hiro trust').

Evidence whose own facts contradict each other (its verdict, exit code, gate
statuses and failures: a file edited by hand) is refused first, naming the field.

Exit status: 0 the signature verifies (trusted or not: the output says); 1
evidence that contradicts itself, unsigned, or the signature does not verify; 2 bad usage (no such file).`,
		Args: needArgs(1, 1, "the evidence file or a campaign's evidence folder", "hiro evidence verify .hiro/evidence/demo/<id>/evidence.json"),
		RunE: func(c *cobra.Command, args []string) error { return runEvidenceVerify(g, args[0]) },
	})
	return cmd
}

func runEvidenceVerify(g *Globals, arg string) error {
	// A campaign's evidence folder, as activate takes it: its public
	// evidence.json (else the private one), named in the output.
	path, err := evidence.File(arg, evidence.PublicFile, evidence.PrivateFile)
	if err != nil {
		return UsageError(fmt.Errorf("evidence verify: %w", err))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return UsageError(fmt.Errorf("evidence verify: %w", err))
	}
	if err := evidenceConsistent(b); err != nil {
		return FailedError(fmt.Errorf("evidence verify: %s: refused: %w", path, err))
	}
	sig, err := signing.Verify(b)
	if errors.Is(err, signing.ErrUnsigned) {
		return FailedError(fmt.Errorf("evidence verify: %s: %w (evidence written by a hiro older than signing has none; hiro acts on it only with --trust-unsigned)", path, err))
	}
	if err != nil {
		return FailedError(fmt.Errorf("evidence verify: %s: %w", path, err))
	}
	trust := "a key you do not trust (add it with 'hiro trust add " + sig.PublicKey + "')"
	if t, err := signing.LoadTrust(); err != nil {
		trust = "trust list unreadable: " + err.Error()
	} else if tk := t.Trusted(sig); tk != nil {
		trust = "trusted: " + tk.Name
	}
	fmt.Fprintf(g.Stdout, "%s: signature verifies\nkey   %s\n      %s\n      %s\n", path, sig.KeyID, sig.PublicKey, trust)
	return nil
}

// evidenceConsistent refuses evidence (a document whose schema is
// hiro.evidence/*) whose own facts contradict each other
// (evidence.Consistent); other documents (activation records) pass.
func evidenceConsistent(b []byte) error {
	var doc struct {
		Schema string `json:"schema"`
	}
	if json.Unmarshal(b, &doc) != nil || !strings.HasPrefix(doc.Schema, evidenceSchemaPrefix) {
		return nil
	}
	ev, err := evidence.Decode(b)
	if err != nil {
		return err
	}
	return ev.Consistent()
}

// evidenceSchemaPrefix starts every evidence schema id (evidence.SchemaID).
const evidenceSchemaPrefix = "hiro.evidence/"
