package corpus

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/hiro-dev/hiro/internal/atomicfile"
)

// FactcheckSelection is the deterministic selection rule of
// ImportFactcheckGPT, recorded in the manifest.
const FactcheckSelection = "sort records by hex SHA-256 of the prompt text (ties: of the response), take the first N"

// factcheckRecord is the part of a Factcheck-GPT line hiro reads.
type factcheckRecord struct {
	Prompt    string                       `json:"prompt"`
	Response  string                       `json:"response"`
	Sentences map[string]factcheckSentence `json:"sentences"`
	line      int
	key       string // sha256(prompt) hex
	tie       string // sha256(response) hex
}

type factcheckSentence struct {
	Text   string   `json:"text"`
	Claims []string `json:"claims"`
}

// FactcheckDocID is the document id of a Factcheck-GPT source:
// "fcgpt-" and the first 12 hex digits of the SHA-256 of its prompt.
// When the file holds other rows with the same prompt, the importer adds
// "-" and the first 8 hex digits of the SHA-256 of the response
// (FactcheckDocIDRepeated), so distinct rows get distinct ids.
func FactcheckDocID(prompt string) string {
	s := sha256.Sum256([]byte(prompt))
	return "fcgpt-" + hex.EncodeToString(s[:])[:12]
}

// FactcheckDocIDRepeated is the id of a source whose prompt other rows of
// the file share: FactcheckDocID(prompt) + "-" + 8 hex digits of
// SHA-256(response).
func FactcheckDocIDRepeated(prompt, response string) string {
	s := sha256.Sum256([]byte(response))
	return FactcheckDocID(prompt) + "-" + hex.EncodeToString(s[:])[:8]
}

// ImportFactcheckGPT reads the Factcheck-GPT benchmark JSONL at file,
// selects take sources by FactcheckSelection and writes a frozen corpus to
// outDir (which must not exist or be empty): docs/<id>.txt holding each
// source's response exactly, gold.jsonl with one GoldClaim per claim of the
// "claims" lists (sentence order "sentence1", "sentence2", ... → index 0,
// 1, ...; blank claims skipped), and manifest.json. Same file and take,
// same bytes out. Rows repeating a prompt get ids that tell them apart
// (FactcheckDocIDRepeated); a row repeating an earlier row's prompt and
// response is the same source and is read once.
//
// The corpus is written into a temporary directory beside outDir and
// renamed into place at the end: a failed import leaves nothing behind.
// An outDir that is a file, or under one, is refused before the file is
// read, with an error wrapping atomicfile.ErrNotDir.
func ImportFactcheckGPT(file string, take int, outDir string) (*Manifest, error) {
	if take <= 0 {
		return nil, fmt.Errorf("take %d: must be at least 1", take)
	}
	// Before anything is read: a path that cannot be a directory is the
	// caller's mistake (an error wrapping atomicfile.ErrNotDir).
	if err := atomicfile.CheckDirPath(outDir); err != nil {
		return nil, fmt.Errorf("%w; give a new directory path for the corpus", err)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read Factcheck-GPT file: %w", err)
	}
	var recs []*factcheckRecord
	seen := map[[2]string]bool{}
	prompts := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		r := &factcheckRecord{line: n}
		if err := json.Unmarshal(line, r); err != nil {
			return nil, fmt.Errorf("%s:%d: not a Factcheck-GPT record: %w", file, n, err)
		}
		if strings.TrimSpace(r.Response) == "" {
			var keys map[string]json.RawMessage
			if json.Unmarshal(line, &keys) == nil {
				if _, ok := keys["response"]; !ok {
					names := make([]string, 0, len(keys))
					for k := range keys {
						names = append(names, k)
					}
					sort.Strings(names)
					return nil, fmt.Errorf("%s:%d: not a Factcheck-GPT record: no \"response\" field (keys: %s); give factcheck-GPT-benchmark.jsonl from github.com/yuxiaw/Factcheck-GPT", file, n, strings.Join(names, ", "))
				}
			}
			return nil, fmt.Errorf("%s:%d: empty response", file, n)
		}
		p := sha256.Sum256([]byte(r.Prompt))
		q := sha256.Sum256([]byte(r.Response))
		r.key, r.tie = hex.EncodeToString(p[:]), hex.EncodeToString(q[:])
		if seen[[2]string{r.key, r.tie}] {
			continue // the same source again
		}
		seen[[2]string{r.key, r.tie}] = true
		prompts[r.Prompt]++
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if take > len(recs) {
		return nil, fmt.Errorf("take %d: the file has only %d sources", take, len(recs))
	}
	sort.Slice(recs, func(i, j int) bool {
		if recs[i].key != recs[j].key {
			return recs[i].key < recs[j].key
		}
		return recs[i].tie < recs[j].tie
	})
	chosen := recs[:take]
	if err := checkOutDir(outDir); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(outDir)), "."+filepath.Base(filepath.Clean(outDir))+".import-")
	if err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	m, err := writeFactcheck(file, raw, take, len(recs), chosen, prompts, tmp)
	if err == nil {
		err = moveInto(tmp, outDir)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return m, nil
}

// writeFactcheck writes the chosen sources as a sealed corpus into dir.
func writeFactcheck(file string, raw []byte, take, available int, chosen []*factcheckRecord, prompts map[string]int, dir string) (*Manifest, error) {
	if err := os.MkdirAll(filepath.Join(dir, DocsDir), 0o755); err != nil {
		return nil, err
	}
	var gold bytes.Buffer
	ids := map[string]int{}
	for _, r := range chosen {
		id := FactcheckDocID(r.Prompt)
		if prompts[r.Prompt] > 1 {
			id = FactcheckDocIDRepeated(r.Prompt, r.Response)
		}
		if prev, dup := ids[id]; dup {
			return nil, fmt.Errorf("%s: lines %d and %d give the same document id %s (their prompts and the start of their responses' digests agree); report this file", file, prev, r.line, id)
		}
		ids[id] = r.line
		if err := os.WriteFile(filepath.Join(dir, DocsDir, id+".txt"), []byte(r.Response), 0o644); err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(r.Sentences))
		for k := range r.Sentences {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return sentenceNumber(keys[i]) < sentenceNumber(keys[j]) })
		for i, k := range keys {
			for _, c := range r.Sentences[k].Claims {
				if strings.TrimSpace(c) == "" {
					continue
				}
				b, _ := json.Marshal(GoldClaim{DocID: id, SentenceIndex: i, Text: strings.TrimSpace(c)})
				gold.Write(b)
				gold.WriteByte('\n')
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, GoldFile), gold.Bytes(), 0o644); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	src := &Source{Kind: "factcheck-gpt", File: filepath.Base(file), FileSHA256: hex.EncodeToString(sum[:]), Take: take, Available: available, Selection: FactcheckSelection}
	return Seal(dir, fmt.Sprintf("factcheck-gpt-%d", take), src)
}

// sentenceNumber parses "sentence12" → 12; other keys sort last.
func sentenceNumber(k string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(k, "sentence"))
	if err != nil {
		return 1 << 30
	}
	return n
}

// checkOutDir refuses a dir that holds anything, and creates its parent.
func checkOutDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err == nil && len(ents) > 0 {
		return fmt.Errorf("output directory %s is not empty; a frozen corpus is written once: choose a new directory or remove it", dir)
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.MkdirAll(filepath.Dir(filepath.Clean(dir)), 0o755)
}

// moveInto renames the finished directory tmp to dir, which may exist
// empty (it is replaced) or not at all.
func moveInto(tmp, dir string) error {
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("output directory %s: %w", dir, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}
