package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/signing"
)

func init() { registerCommand(newTrustCmd) }

func newTrustCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trust [list | add KEY|FILE [--name NAME] | remove KEY-ID | key]",
		Short: "List, add or remove the keys whose signed evidence hiro acts on",
		Long: `hiro signs every evidence document and activation record it writes with your
Ed25519 key (created on first use in your private state folder, keys/signing.key,
0600 in a 0700 folder). 'hiro activate' and 'hiro rollback' act only on what a
trusted key signed: your own key always, and the keys listed here (another
machine's or a CI runner's hiro). 'hiro journal add' publishes evidence
signed by any key, recording which, and warns when it is not trusted.

With no subcommand, or 'list', list the trusted keys. 'add' takes a public key
(ed25519:BASE64, as 'hiro trust key' or a signature's public_key prints it) or
a signed evidence file, whose signer's key is added after its signature
verifies. 'remove' takes a key's fingerprint (SHA256:...) or its text.
'key' prints your own public key, to add on another machine.

The list is keys/trusted_keys in the private state folder (one key a line);
a list another user owns or others may write is refused.`,
		Args:        needArgs(0, 0, "", ""),
		Annotations: map[string]string{annotationRunsItself: "yes"},
		RunE:        func(c *cobra.Command, _ []string) error { return runTrustList(g) },
	}
	var name string
	add := &cobra.Command{
		Use:   "add KEY|FILE [--name NAME]",
		Short: "Trust a public key, or the key that signed an evidence file",
		Args:  needArgs(1, 1, "a public key (ed25519:BASE64) or a signed evidence file", "hiro trust add ed25519:... --name ci"),
		RunE:  func(c *cobra.Command, args []string) error { return runTrustAdd(g, args[0], name) },
	}
	add.Flags().StringVar(&name, "name", "", "what to call the key in the list (default: where it came from)")
	remove := &cobra.Command{
		Use:   "remove KEY-ID",
		Short: "Stop trusting a key",
		Args:  needArgs(1, 1, "the key's fingerprint (SHA256:...) as 'hiro trust' lists it", "hiro trust remove SHA256:..."),
		RunE:  func(c *cobra.Command, args []string) error { return runTrustRemove(g, args[0]) },
	}
	key := &cobra.Command{
		Use:   "key",
		Short: "Print your own public key (created on first use)",
		Args:  needArgs(0, 0, "", ""),
		RunE: func(c *cobra.Command, _ []string) error {
			k, err := signing.LoadOrCreate()
			if err != nil {
				return FailedError(fmt.Errorf("trust key: %w", err))
			}
			fmt.Fprintf(g.Stdout, "%s %s\n", k.Public(), k.Public().ID())
			return nil
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the trusted keys (what 'hiro trust' alone prints)",
		Args:  needArgs(0, 0, "", ""),
		RunE:  func(c *cobra.Command, _ []string) error { return runTrustList(g) },
	}
	cmd.AddCommand(list, add, remove, key)
	return cmd
}

func runTrustList(g *Globals) error {
	t, err := signing.LoadTrust()
	if err != nil {
		return FailedError(fmt.Errorf("trust: %w", err))
	}
	if len(t.Keys) == 0 {
		fmt.Fprintln(g.Stdout, "no trusted keys yet: your own is made by your first campaign (or 'hiro trust key'); add others with 'hiro trust add'")
		return nil
	}
	for _, k := range t.Keys {
		fmt.Fprintf(g.Stdout, "%s  %s  %s\n", k.Key.ID(), k.Key, k.Name)
	}
	return nil
}

func runTrustAdd(g *Globals, arg, name string) error {
	pub, err := signing.ParsePublicKey(arg)
	from := "added by hand"
	if err != nil {
		b, rerr := os.ReadFile(arg)
		if rerr != nil {
			if strings.HasPrefix(arg, signing.Algorithm+":") || !errors.Is(rerr, os.ErrNotExist) {
				return UsageError(fmt.Errorf("trust add: %w", err))
			}
			return UsageError(fmt.Errorf("trust add: %s is neither a public key (ed25519:BASE64) nor a file: %w", arg, rerr))
		}
		sig, verr := signing.Verify(b)
		if verr != nil {
			return FailedError(fmt.Errorf("trust add: %s: %w; only the key of a document whose signature verifies can be added from it", arg, verr))
		}
		pub, _ = signing.ParsePublicKey(sig.PublicKey)
		from = "signer of " + arg
	}
	if name == "" {
		name = from
	}
	t, err := signing.LoadTrust()
	if err != nil {
		return FailedError(fmt.Errorf("trust add: %w", err))
	}
	if err := t.Add(pub, name); err != nil {
		return FailedError(fmt.Errorf("trust add: %w", err))
	}
	fmt.Fprintf(g.Stdout, "trusted %s (%s) as %q in %s\n", pub.ID(), pub, strings.Join(strings.Fields(name), " "), t.Path)
	return nil
}

func runTrustRemove(g *Globals, id string) error {
	t, err := signing.LoadTrust()
	if err != nil {
		return FailedError(fmt.Errorf("trust remove: %w", err))
	}
	k, err := t.Remove(id)
	if err != nil {
		return FailedError(fmt.Errorf("trust remove: %w", err))
	}
	fmt.Fprintf(g.Stdout, "no longer trusted: %s (%s)\n", k.Key.ID(), k.Name)
	return nil
}
