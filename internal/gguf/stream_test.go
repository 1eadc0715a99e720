package gguf

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// WriteStream with the tensors' own data writes the bytes WriteTo
// writes; WriteSparseFile writes the same header and the same size.
func TestWriteStreamAndSparse(t *testing.T) {
	a, _ := NewF32("a", []uint64{3}, []float32{1, 2, 3})
	b, _ := NewQ8_0("b", []uint64{32, 2}, make([]float32, 64))
	f := &File{KV: []KV{{Key: "general.architecture", Value: "llama"}}, Tensors: []Tensor{a, b}}
	var want, got bytes.Buffer
	if _, err := f.WriteTo(&want); err != nil {
		t.Fatal(err)
	}
	layout := &File{KV: f.KV, Tensors: []Tensor{{Name: "a", Dims: a.Dims, Type: F32}, {Name: "b", Dims: b.Dims, Type: Q8_0}}}
	n, err := layout.WriteStream(&got, func(i int, size uint64, w io.Writer) error {
		_, err := w.Write(f.Tensors[i].Data)
		return err
	})
	if err != nil || !bytes.Equal(got.Bytes(), want.Bytes()) || n != int64(want.Len()) {
		t.Fatalf("stream differs (n %d, err %v)", n, err)
	}
	if _, err := layout.WriteStream(io.Discard, func(int, uint64, io.Writer) error { return nil }); err == nil {
		t.Error("a fill that writes too few bytes must fail")
	}
	p := filepath.Join(t.TempDir(), "s.gguf")
	if n, err := layout.WriteSparseFile(p); err != nil || n != int64(want.Len()) {
		t.Fatalf("sparse: %d %v, want %d", n, err, want.Len())
	}
	s, _ := os.ReadFile(p)
	hdr := want.Len() - 32 - 96 // before the aligned data: a (12 bytes in 32), b (68 in 96)
	if !bytes.Equal(s[:hdr], want.Bytes()[:hdr]) {
		t.Error("sparse header differs")
	}
	back, err := Read(s)
	if err != nil || len(back.Tensors) != 2 || back.Tensors[1].Type != Q8_0 {
		t.Fatalf("read back: %v", err)
	}
}
