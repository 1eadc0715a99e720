package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// Version is the GGUF version this package writes (and the only one it reads).
const Version = 3

// DefaultAlignment is the byte alignment of tensor data when the metadata has
// no general.alignment key (ggml's GGUF_DEFAULT_ALIGNMENT).
const DefaultAlignment = 32

// ValueType is the type code of a metadata value (gguf_type in ggml).
type ValueType uint32

// Metadata value type codes, as ggml numbers them.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

// TensorType is a ggml tensor element type (ggml_type).
type TensorType uint32

// Tensor types this package can write and read.
const (
	F32  TensorType = 0
	F16  TensorType = 1
	Q8_0 TensorType = 8
)

// String names the tensor type as ggml does ("f32", "f16", "q8_0").
func (t TensorType) String() string {
	switch t {
	case F32:
		return "f32"
	case F16:
		return "f16"
	case Q8_0:
		return "q8_0"
	}
	return fmt.Sprintf("ggml_type(%d)", uint32(t))
}

// KV is one metadata pair. Value holds one of the Go types uint8, int8,
// uint16, int16, uint32, int32, float32, bool, string, uint64, int64,
// float64, or a slice of one of them (an array; arrays of arrays are not
// supported). The reader returns values in the same Go types.
type KV struct {
	Key   string
	Value any
}

// Tensor is one named tensor. Dims lists the dimensions innermost first
// (ggml's ne[0], ne[1], ...); Data holds the encoded elements, whose length
// must match Dims and Type.
type Tensor struct {
	Name string
	Dims []uint64
	Type TensorType
	Data []byte
}

// Elements is the number of elements: the product of Dims.
func (t Tensor) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// ByteSize is the encoded size of n elements of type t, or an error when n is
// not a whole number of blocks (Q8_0 packs 32 elements into 34 bytes).
func ByteSize(t TensorType, n uint64) (uint64, error) {
	switch t {
	case F32:
		return 4 * n, nil
	case F16:
		return 2 * n, nil
	case Q8_0:
		if n%32 != 0 {
			return 0, fmt.Errorf("q8_0 needs a multiple of 32 elements, got %d", n)
		}
		return n / 32 * 34, nil
	}
	return 0, fmt.Errorf("unsupported tensor type %s", t)
}

// File is a whole GGUF file in memory: metadata in order, then tensors in
// order (data is laid out in the same order).
type File struct {
	KV      []KV
	Tensors []Tensor
}

// Get returns the value of key and whether it is present.
func (f *File) Get(key string) (any, bool) {
	for _, kv := range f.KV {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return nil, false
}

// Tensor returns the tensor called name and whether it is present.
func (f *File) Tensor(name string) (Tensor, bool) {
	for _, t := range f.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return Tensor{}, false
}

// Alignment is general.alignment when present (a uint32), else DefaultAlignment.
func (f *File) Alignment() uint64 {
	if v, ok := f.Get("general.alignment"); ok {
		if a, ok := v.(uint32); ok && a > 0 {
			return uint64(a)
		}
	}
	return DefaultAlignment
}

// Validate checks what the writer relies on: unique keys and tensor names,
// supported value and tensor types, data lengths matching the dimensions.
func (f *File) Validate() error { return f.validate(false) }

// validate checks f; layout allows tensors without Data (their data is
// streamed by WriteStream's fill, or left sparse by WriteSparseFile).
func (f *File) validate(layout bool) error {
	seen := map[string]bool{}
	for _, kv := range f.KV {
		if seen[kv.Key] {
			return fmt.Errorf("gguf: metadata key %q appears twice", kv.Key)
		}
		seen[kv.Key] = true
		if _, _, err := valueType(kv.Value); err != nil {
			return fmt.Errorf("gguf: metadata key %q: %w", kv.Key, err)
		}
	}
	names := map[string]bool{}
	for _, t := range f.Tensors {
		if names[t.Name] {
			return fmt.Errorf("gguf: tensor %q appears twice", t.Name)
		}
		names[t.Name] = true
		if len(t.Dims) == 0 || len(t.Dims) > 4 {
			return fmt.Errorf("gguf: tensor %q has %d dimensions; ggml allows 1 to 4", t.Name, len(t.Dims))
		}
		want, err := ByteSize(t.Type, t.Elements())
		if err != nil {
			return fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
		}
		if uint64(len(t.Data)) != want && !(layout && t.Data == nil) {
			return fmt.Errorf("gguf: tensor %q: %d bytes of data, dimensions %v of %s need %d", t.Name, len(t.Data), t.Dims, t.Type, want)
		}
	}
	return nil
}

// Size is the tensor's encoded size in bytes: ByteSize of its type and
// elements (a tensor without Data, a layout only, has a size too).
func (t Tensor) Size() (uint64, error) { return ByteSize(t.Type, t.Elements()) }

// valueType maps a Go value to its GGUF type, and for arrays the element type.
func valueType(v any) (ValueType, ValueType, error) {
	switch v.(type) {
	case uint8:
		return TypeUint8, 0, nil
	case int8:
		return TypeInt8, 0, nil
	case uint16:
		return TypeUint16, 0, nil
	case int16:
		return TypeInt16, 0, nil
	case uint32:
		return TypeUint32, 0, nil
	case int32:
		return TypeInt32, 0, nil
	case float32:
		return TypeFloat32, 0, nil
	case bool:
		return TypeBool, 0, nil
	case string:
		return TypeString, 0, nil
	case uint64:
		return TypeUint64, 0, nil
	case int64:
		return TypeInt64, 0, nil
	case float64:
		return TypeFloat64, 0, nil
	case []uint8:
		return TypeArray, TypeUint8, nil
	case []int8:
		return TypeArray, TypeInt8, nil
	case []uint16:
		return TypeArray, TypeUint16, nil
	case []int16:
		return TypeArray, TypeInt16, nil
	case []uint32:
		return TypeArray, TypeUint32, nil
	case []int32:
		return TypeArray, TypeInt32, nil
	case []float32:
		return TypeArray, TypeFloat32, nil
	case []bool:
		return TypeArray, TypeBool, nil
	case []string:
		return TypeArray, TypeString, nil
	case []uint64:
		return TypeArray, TypeUint64, nil
	case []int64:
		return TypeArray, TypeInt64, nil
	case []float64:
		return TypeArray, TypeFloat64, nil
	}
	return 0, 0, fmt.Errorf("unsupported value type %T (use a fixed-size integer, float32/64, bool, string or a slice of one)", v)
}

// WriteTo encodes the file. It validates first and writes nothing on error.
// It returns the number of bytes written.
func (f *File) WriteTo(w io.Writer) (int64, error) {
	if err := f.Validate(); err != nil {
		return 0, err
	}
	return f.write(w, func(i int, _ uint64, w io.Writer) error {
		_, err := w.Write(f.Tensors[i].Data)
		return err
	})
}

// Fill writes tensor i's size bytes of data to w (WriteStream).
type Fill func(i int, size uint64, w io.Writer) error

// WriteStream encodes the file like WriteTo, taking each tensor's data
// from fill instead of Tensor.Data, so a file of many GiB (a model of a
// real shape with generated weights) is written without holding it in
// memory. Tensors need Dims and Type; their Data is ignored. fill must
// write exactly the size it is given.
func (f *File) WriteStream(w io.Writer, fill Fill) (int64, error) {
	if err := f.validate(true); err != nil {
		return 0, err
	}
	return f.write(w, fill)
}

// WriteSparseFile writes the header and tensor descriptors of f (Data
// ignored) and extends the file to its full size without writing the
// tensor data: a sparse file of zeros on file systems that support them.
// Parsers that read only the metadata (memory estimates, tests) see a
// model of its real shape; engines see all-zero weights.
func (f *File) WriteSparseFile(path string) (int64, error) {
	if err := f.validate(true); err != nil {
		return 0, err
	}
	out, err := os.Create(path)
	if err != nil {
		return 0, fmt.Errorf("gguf: create %s: %w", path, err)
	}
	n, err := f.write(out, nil)
	if err == nil {
		err = out.Truncate(n)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("gguf: write %s: %w", path, err)
	}
	return n, nil
}

// write encodes the header, then each tensor's data from fill (nil: the
// data is skipped and only counted, for WriteSparseFile), padded to the
// alignment. It returns the file's full size.
func (f *File) write(w io.Writer, fill Fill) (int64, error) {
	sizes := make([]uint64, len(f.Tensors))
	for i, t := range f.Tensors {
		sizes[i], _ = t.Size()
	}
	cw := &countWriter{w: bufio.NewWriterSize(w, 1<<20)}
	le := binary.LittleEndian
	put := func(v any) { _ = binary.Write(cw, le, v) }
	putString := func(s string) {
		put(uint64(len(s)))
		_, _ = io.WriteString(cw, s)
	}
	cw.Write([]byte(Magic))
	put(uint32(Version))
	put(uint64(len(f.Tensors)))
	put(uint64(len(f.KV)))
	for _, kv := range f.KV {
		putString(kv.Key)
		t, et, _ := valueType(kv.Value)
		put(uint32(t))
		if t == TypeArray {
			put(uint32(et))
		}
		switch v := kv.Value.(type) {
		case string:
			putString(v)
		case []string:
			put(uint64(len(v)))
			for _, s := range v {
				putString(s)
			}
		case bool:
			put(boolByte(v))
		case []bool:
			put(uint64(len(v)))
			for _, b := range v {
				put(boolByte(b))
			}
		default:
			if t == TypeArray {
				put(uint64(sliceLen(v)))
			}
			put(v)
		}
	}
	align := f.Alignment()
	var offset uint64
	offsets := make([]uint64, len(f.Tensors))
	for i, t := range f.Tensors {
		putString(t.Name)
		put(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			put(d)
		}
		put(uint32(t.Type))
		put(offset)
		offsets[i] = offset
		offset = pad(offset+sizes[i], align)
	}
	cw.Write(make([]byte, pad(uint64(cw.n), align)-uint64(cw.n)))
	if fill == nil {
		if cw.err == nil {
			cw.err = cw.w.(*bufio.Writer).Flush()
		}
		return cw.n + int64(offset), cw.err
	}
	for i := range f.Tensors {
		start := cw.n
		if err := fill(i, sizes[i], cw); err != nil && cw.err == nil {
			cw.err = fmt.Errorf("gguf: tensor %q: %w", f.Tensors[i].Name, err)
		}
		if got := uint64(cw.n - start); cw.err == nil && got != sizes[i] {
			cw.err = fmt.Errorf("gguf: tensor %q: %d bytes of data written, %d needed", f.Tensors[i].Name, got, sizes[i])
		}
		end := offsets[i] + sizes[i]
		cw.Write(make([]byte, pad(end, align)-end))
	}
	if cw.err == nil {
		cw.err = cw.w.(*bufio.Writer).Flush()
	}
	return cw.n, cw.err
}

// WriteFile writes the file atomically: a temporary file in the same
// directory, fsync, rename. It returns the size in bytes.
func (f *File) WriteFile(path string) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".gguf-*")
	if err != nil {
		return 0, fmt.Errorf("gguf: create %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	n, err := f.WriteTo(tmp)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return 0, fmt.Errorf("gguf: write %s: %w", path, err)
	}
	return n, nil
}

func boolByte(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

func sliceLen(v any) int {
	switch s := v.(type) {
	case []uint8:
		return len(s)
	case []int8:
		return len(s)
	case []uint16:
		return len(s)
	case []int16:
		return len(s)
	case []uint32:
		return len(s)
	case []int32:
		return len(s)
	case []float32:
		return len(s)
	case []uint64:
		return len(s)
	case []int64:
		return len(s)
	case []float64:
		return len(s)
	}
	return 0
}

func pad(n, align uint64) uint64 { return (n + align - 1) / align * align }

type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}

// ErrNotGGUF is returned by Read when the data does not start with the GGUF magic.
var ErrNotGGUF = errors.New("gguf: not a GGUF file (bad magic)")

// ReadFile reads and parses a whole GGUF file.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Read(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Read parses a GGUF v3 file held in b. Tensor data slices alias b.
func Read(b []byte) (*File, error) {
	r := &reader{b: b}
	if len(b) < 4 || string(b[:4]) != Magic {
		return nil, ErrNotGGUF
	}
	r.off = 4
	if v := r.u32(); v != Version && r.err == nil {
		return nil, fmt.Errorf("gguf: version %d, only %d is supported", v, Version)
	}
	nt, nkv := r.u64(), r.u64()
	if r.err != nil {
		return nil, r.err
	}
	if nkv > uint64(len(b)) || nt > uint64(len(b)) {
		return nil, fmt.Errorf("gguf: header counts %d tensors, %d keys: more than the file can hold", nt, nkv)
	}
	f := &File{}
	for i := uint64(0); i < nkv && r.err == nil; i++ {
		key := r.str()
		t := ValueType(r.u32())
		v := r.value(t)
		f.KV = append(f.KV, KV{Key: key, Value: v})
	}
	type info struct {
		off uint64
		t   Tensor
	}
	var infos []info
	for i := uint64(0); i < nt && r.err == nil; i++ {
		var t Tensor
		t.Name = r.str()
		nd := r.u32()
		if nd == 0 || nd > 4 {
			r.fail(fmt.Errorf("tensor %q has %d dimensions", t.Name, nd))
			break
		}
		for j := uint32(0); j < nd; j++ {
			t.Dims = append(t.Dims, r.u64())
		}
		t.Type = TensorType(r.u32())
		infos = append(infos, info{off: r.u64(), t: t})
	}
	if r.err != nil {
		return nil, r.err
	}
	base := pad(uint64(r.off), f.Alignment())
	for _, in := range infos {
		size, err := ByteSize(in.t.Type, in.t.Elements())
		if err != nil {
			return nil, fmt.Errorf("gguf: tensor %q: %w", in.t.Name, err)
		}
		start := base + in.off
		if start+size > uint64(len(b)) || start+size < start {
			return nil, fmt.Errorf("gguf: tensor %q: data at %d+%d runs past the end of the file (%d bytes)", in.t.Name, start, size, len(b))
		}
		in.t.Data = b[start : start+size]
		f.Tensors = append(f.Tensors, in.t)
	}
	return f, nil
}

type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = fmt.Errorf("gguf: at byte %d: %w", r.off, err)
	}
}

func (r *reader) take(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)-r.off) {
		r.fail(io.ErrUnexpectedEOF)
		return nil
	}
	p := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return p
}

func (r *reader) u8() uint8 {
	if p := r.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if p := r.take(2); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if p := r.take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if p := r.take(8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

func (r *reader) str() string { return string(r.take(r.u64())) }

func (r *reader) count(elemSize uint64) int {
	n := r.u64()
	if r.err == nil && elemSize > 0 && n > uint64(len(r.b)-r.off)/elemSize {
		r.fail(fmt.Errorf("array of %d elements runs past the end of the file", n))
		return 0
	}
	return int(n)
}

func (r *reader) value(t ValueType) any {
	switch t {
	case TypeUint8:
		return r.u8()
	case TypeInt8:
		return int8(r.u8())
	case TypeUint16:
		return r.u16()
	case TypeInt16:
		return int16(r.u16())
	case TypeUint32:
		return r.u32()
	case TypeInt32:
		return int32(r.u32())
	case TypeFloat32:
		return math.Float32frombits(r.u32())
	case TypeBool:
		return r.u8() != 0
	case TypeString:
		return r.str()
	case TypeUint64:
		return r.u64()
	case TypeInt64:
		return int64(r.u64())
	case TypeFloat64:
		return math.Float64frombits(r.u64())
	case TypeArray:
		return r.array(ValueType(r.u32()))
	}
	r.fail(fmt.Errorf("unknown metadata value type %d", t))
	return nil
}

func (r *reader) array(et ValueType) any {
	sizes := map[ValueType]uint64{TypeUint8: 1, TypeInt8: 1, TypeBool: 1, TypeUint16: 2, TypeInt16: 2,
		TypeUint32: 4, TypeInt32: 4, TypeFloat32: 4, TypeUint64: 8, TypeInt64: 8, TypeFloat64: 8, TypeString: 8}
	es, ok := sizes[et]
	if !ok {
		r.fail(fmt.Errorf("unsupported array element type %d", et))
		return nil
	}
	n := r.count(es)
	switch et {
	case TypeString:
		s := make([]string, 0, n)
		for i := 0; i < n && r.err == nil; i++ {
			s = append(s, r.str())
		}
		return s
	case TypeBool:
		s := make([]bool, n)
		for i := range s {
			s[i] = r.u8() != 0
		}
		return s
	}
	vals := make([]any, n)
	for i := range vals {
		vals[i] = r.value(et)
	}
	return typedSlice(et, vals)
}

func typedSlice(et ValueType, vals []any) any {
	switch et {
	case TypeUint8:
		return conv[uint8](vals)
	case TypeInt8:
		return conv[int8](vals)
	case TypeUint16:
		return conv[uint16](vals)
	case TypeInt16:
		return conv[int16](vals)
	case TypeUint32:
		return conv[uint32](vals)
	case TypeInt32:
		return conv[int32](vals)
	case TypeFloat32:
		return conv[float32](vals)
	case TypeUint64:
		return conv[uint64](vals)
	case TypeInt64:
		return conv[int64](vals)
	case TypeFloat64:
		return conv[float64](vals)
	}
	return nil
}

func conv[T any](vals []any) []T {
	out := make([]T, len(vals))
	for i, v := range vals {
		out[i], _ = v.(T)
	}
	return out
}

// SortedKeys returns the metadata keys in byte order (for stable listings).
func (f *File) SortedKeys() []string {
	keys := make([]string, 0, len(f.KV))
	for _, kv := range f.KV {
		keys = append(keys, kv.Key)
	}
	sort.Strings(keys)
	return keys
}
