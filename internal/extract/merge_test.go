package extract

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestShardPartition(t *testing.T) {
	const n = 7
	counts := make([]int, n)
	for k := 0; k < 7000; k++ {
		id := fmt.Sprintf("docs/%d.txt", k)
		in := 0
		for i := 0; i < n; i++ {
			if (Shard{Index: i, Count: n}).Has(id) {
				in++
				counts[i]++
			}
		}
		if in != 1 {
			t.Fatalf("%s is in %d shards, want exactly 1", id, in)
		}
	}
	for i, c := range counts {
		if c < 800 || c > 1200 {
			t.Errorf("shard %d/%d has %d of 7000 documents: the split is lopsided", i, n, c)
		}
	}
	if !(Shard{}).Has("anything") {
		t.Error("the zero Shard must hold every document")
	}
	for _, s := range []string{"0/1", "3/4", " 1 / 2 "} {
		if _, err := ParseShard(s); err != nil {
			t.Errorf("ParseShard(%q): %v", s, err)
		}
	}
	for _, s := range []string{"4/4", "-1/4", "1/0", "1", "x/y", ""} {
		if _, err := ParseShard(s); err == nil {
			t.Errorf("ParseShard(%q) accepted", s)
		}
	}
}

// Counts of 1 agree with their noun (issue 26, T2): one shard of two
// given is "1 directory was given".
func TestMergeOneDirectoryAgrees(t *testing.T) {
	dir := t.TempDir()
	b, _ := json.Marshal(RunInfo{Shard: &Shard{Index: 0, Count: 2, Documents: 1}})
	if err := os.WriteFile(filepath.Join(dir, RunFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Merge(filepath.Join(t.TempDir(), "merged"), []string{dir})
	if err == nil || !strings.Contains(err.Error(), "but 1 directory was given; give every shard") {
		t.Errorf("Merge of one shard of two: %v, want \"1 directory was given\"", err)
	}
}
