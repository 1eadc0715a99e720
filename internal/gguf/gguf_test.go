package gguf

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func sampleFile(t *testing.T) *File {
	t.Helper()
	f32, err := NewF32("a.f32", []uint64{3, 2}, []float32{1, -2, 3.5, 0, 1e-3, -7})
	if err != nil {
		t.Fatal(err)
	}
	f16, err := NewF16("b.f16", []uint64{5}, []float32{0.5, -1, 2, 65504, -0.25})
	if err != nil {
		t.Fatal(err)
	}
	q := make([]float32, 64)
	for i := range q {
		q[i] = float32(i-32) / 8
	}
	q8, err := NewQ8_0("c.q8", []uint64{32, 2}, q)
	if err != nil {
		t.Fatal(err)
	}
	return &File{
		KV: []KV{
			{"general.architecture", "llama"},
			{"u8", uint8(7)}, {"i8", int8(-7)}, {"u16", uint16(65000)}, {"i16", int16(-300)},
			{"u32", uint32(1 << 31)}, {"i32", int32(-5)}, {"f32", float32(1e-5)}, {"yes", true},
			{"u64", uint64(1 << 40)}, {"i64", int64(-1 << 40)}, {"f64", 3.25},
			{"tokens", []string{"a", "", "<|end|>", "é"}}, {"types", []int32{1, 1, 3, 1}},
			{"empty", []string{}}, {"flags", []bool{true, false}}, {"scores", []float32{0.5, -1}},
			{"bytes", []uint8{1, 2, 3}}, {"big", []uint64{1, 2}}, {"f64s", []float64{1.5}},
		},
		Tensors: []Tensor{f32, f16, q8},
	}
}

func TestRoundTrip(t *testing.T) {
	f := sampleFile(t)
	var buf bytes.Buffer
	n, err := f.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo returned %d, wrote %d", n, buf.Len())
	}
	b := buf.Bytes()
	if string(b[:4]) != "GGUF" || b[4] != 3 {
		t.Fatalf("header %q: want GGUF v3", b[:8])
	}
	g, err := Read(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.KV, g.KV) {
		t.Errorf("metadata differs:\nwrote %#v\nread  %#v", f.KV, g.KV)
	}
	if len(g.Tensors) != len(f.Tensors) {
		t.Fatalf("read %d tensors, wrote %d", len(g.Tensors), len(f.Tensors))
	}
	for i, tw := range f.Tensors {
		tr := g.Tensors[i]
		if tr.Name != tw.Name || tr.Type != tw.Type || !reflect.DeepEqual(tr.Dims, tw.Dims) || !bytes.Equal(tr.Data, tw.Data) {
			t.Errorf("tensor %d: wrote %s %v %s, read %s %v %s (data equal %v)", i, tw.Name, tw.Dims, tw.Type, tr.Name, tr.Dims, tr.Type, bytes.Equal(tr.Data, tw.Data))
		}
		// every tensor's data starts on the 32-byte alignment
		off := int64(len(b)) - int64(cap(tr.Data))
		if off%DefaultAlignment != 0 {
			t.Errorf("tensor %s starts at byte %d, not a multiple of %d", tr.Name, off, DefaultAlignment)
		}
	}
	vals, err := g.Tensors[1].Float32s()
	if err != nil || !reflect.DeepEqual(vals, []float32{0.5, -1, 2, 65504, -0.25}) {
		t.Errorf("f16 values = %v, %v", vals, err)
	}
	q, err := g.Tensors[2].Float32s()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range q {
		want := float32(i-32) / 8
		if math.Abs(float64(v-want)) > 4.0/127/2+1e-3 {
			t.Errorf("q8_0 value %d = %v, want %v within half a step", i, v, want)
		}
	}
}

func TestWriteFileAtomicAndReadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	n, err := sampleFile(t).WriteFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Size() != n {
		t.Fatalf("stat %v size %d, WriteFile said %d", err, st.Size(), n)
	}
	if st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644 so engines running as other users can read it", st.Mode().Perm())
	}
	if _, err := ReadFile(path); err != nil {
		t.Fatal(err)
	}
}

func TestValidateRejects(t *testing.T) {
	bad := []*File{
		{KV: []KV{{"a", 1}}}, // plain int: no fixed size
		{KV: []KV{{"a", uint32(1)}, {"a", uint32(2)}}},
		{Tensors: []Tensor{{Name: "x", Dims: []uint64{4}, Type: F32, Data: make([]byte, 12)}}},
		{Tensors: []Tensor{{Name: "x", Dims: []uint64{31}, Type: Q8_0, Data: make([]byte, 34)}}},
	}
	for i, f := range bad {
		var buf bytes.Buffer
		if _, err := f.WriteTo(&buf); err == nil {
			t.Errorf("case %d: WriteTo accepted an invalid file", i)
		} else if buf.Len() != 0 {
			t.Errorf("case %d: wrote %d bytes before failing", i, buf.Len())
		}
	}
}

func TestReadRejectsCorruptInput(t *testing.T) {
	if _, err := Read([]byte("GGML....")); !errors.Is(err, ErrNotGGUF) {
		t.Errorf("bad magic: %v", err)
	}
	var buf bytes.Buffer
	if _, err := sampleFile(t).WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	// the last 28 bytes are padding after the q8_0 tensor (68 bytes); cut into its data
	for _, cut := range []int{10, 40, len(b) / 2, len(b) - 30} {
		if _, err := Read(b[:cut]); err == nil {
			t.Errorf("a file cut at %d of %d bytes was accepted", cut, len(b))
		}
	}
}

func TestF16Conversion(t *testing.T) {
	cases := map[float32]uint16{0: 0, 1: 0x3c00, -2: 0xc000, 65504: 0x7bff, 1e9: 0x7c00,
		float32(math.Inf(-1)): 0xfc00, 5.960464477539063e-08: 0x0001, 1e-9: 0,
		1.0009765625: 0x3c01, 1.00048828125: 0x3c00 /* tie to even */, 1.00146484375: 0x3c02}
	for f, want := range cases {
		if got := Float32ToF16(f); got != want {
			t.Errorf("Float32ToF16(%v) = %#04x, want %#04x", f, got, want)
		}
	}
	for h := 0; h < 0x10000; h++ {
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
			continue // NaN payloads are not preserved
		}
		if got := Float32ToF16(F16ToFloat32(uint16(h))); got != uint16(h) {
			t.Fatalf("half %#04x → %v → %#04x", h, F16ToFloat32(uint16(h)), got)
		}
	}
}
