package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

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
		Use:   "verify FILE",
		Short: "Verify an evidence file's (or activation record's) signature and say whose key made it",
		Long: `Verify the Ed25519 signature embedded in FILE (public or private evidence, an
activation record, a journal's copy of evidence): it covers the canonical bytes
of the whole document without the signature (docs/reliability.md, "Signatures"), so any edit after
signing breaks it. The document carries its signer's public key: anyone can
verify it with this command alone, and the output says whether the key is in
your trust list ('hiro trust').

Exit status: 0 the signature verifies (trusted or not: the output says); 1
unsigned, or the signature does not verify; 2 bad usage (no such file).`,
		Args: needArgs(1, 1, "the evidence file", "hiro evidence verify .hiro/evidence/demo/<id>/evidence.json"),
		RunE: func(c *cobra.Command, args []string) error { return runEvidenceVerify(g, args[0]) },
	})
	return cmd
}

func runEvidenceVerify(g *Globals, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return UsageError(fmt.Errorf("evidence verify: %w", err))
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
