package evidence

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrNoEvidenceFile is wrapped by File when a folder holds none of the
// evidence files asked for.
var ErrNoEvidenceFile = errors.New("no evidence file in the folder")

// File returns the evidence file arg names, the one resolver of every
// command that reads a campaign's evidence (activate, evidence verify,
// journal add): arg itself when it is a file, or, when arg is a folder
// (a campaign's evidence folder, .hiro/evidence/<plan>/<id>), the first
// of names (PublicFile, PrivateFile) that the folder holds. A missing arg
// is returned as the stat error (a *fs.PathError the CLI words as "not
// found"); a folder holding none of names is refused in hiro's words,
// wrapping ErrNoEvidenceFile.
func File(arg string, names ...string) (string, error) {
	st, err := os.Stat(arg)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return arg, nil
	}
	for _, n := range names {
		p := filepath.Join(arg, n)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	return "", &noFileError{dir: arg, names: names}
}

// noFileError is File's refusal of a folder holding none of the names.
type noFileError struct {
	dir   string
	names []string
}

func (e *noFileError) Error() string {
	return fmt.Sprintf("%s: a folder without %s; give a campaign's evidence folder (.hiro/evidence/<plan>/<id>) or the evidence file in it",
		e.dir, strings.Join(e.names, " or "))
}

func (e *noFileError) Is(target error) bool { return target == ErrNoEvidenceFile }
