package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// NewF32 builds an F32 tensor from values; dims are innermost first and their
// product must equal len(values).
func NewF32(name string, dims []uint64, values []float32) (Tensor, error) {
	if err := checkCount(name, dims, len(values)); err != nil {
		return Tensor{}, err
	}
	b := make([]byte, 4*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return Tensor{Name: name, Dims: dims, Type: F32, Data: b}, nil
}

// NewF16 builds an F16 tensor, rounding each value to the nearest IEEE half
// (ties to even; beyond ±65504 it becomes ±Inf).
func NewF16(name string, dims []uint64, values []float32) (Tensor, error) {
	if err := checkCount(name, dims, len(values)); err != nil {
		return Tensor{}, err
	}
	b := make([]byte, 2*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint16(b[2*i:], Float32ToF16(v))
	}
	return Tensor{Name: name, Dims: dims, Type: F16, Data: b}, nil
}

// NewQ8_0 builds a Q8_0 tensor the way ggml quantizes: blocks of 32 values
// along the innermost dimension, each an f16 scale d = max|x|/127 followed by
// 32 int8 values round(x/d). dims[0] must be a multiple of 32.
func NewQ8_0(name string, dims []uint64, values []float32) (Tensor, error) {
	if err := checkCount(name, dims, len(values)); err != nil {
		return Tensor{}, err
	}
	if len(dims) == 0 || dims[0]%32 != 0 {
		return Tensor{}, fmt.Errorf("gguf: tensor %q: q8_0 needs the innermost dimension to be a multiple of 32, got %v", name, dims)
	}
	nb := len(values) / 32
	b := make([]byte, nb*34)
	for i := 0; i < nb; i++ {
		blk := values[32*i : 32*i+32]
		var amax float32
		for _, v := range blk {
			if a := float32(math.Abs(float64(v))); a > amax {
				amax = a
			}
		}
		d := amax / 127
		id := float32(0)
		if d != 0 {
			id = 1 / d
		}
		out := b[34*i : 34*i+34]
		binary.LittleEndian.PutUint16(out, Float32ToF16(d))
		for j, v := range blk {
			out[2+j] = byte(int8(math.Round(float64(v * id))))
		}
	}
	return Tensor{Name: name, Dims: dims, Type: Q8_0, Data: b}, nil
}

// Float32s decodes the tensor's data to float32 values (F32, F16 or Q8_0).
func (t Tensor) Float32s() ([]float32, error) {
	n := t.Elements()
	want, err := ByteSize(t.Type, n)
	if err != nil {
		return nil, err
	}
	if uint64(len(t.Data)) != want {
		return nil, fmt.Errorf("gguf: tensor %q: %d bytes, want %d", t.Name, len(t.Data), want)
	}
	out := make([]float32, n)
	switch t.Type {
	case F32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
	case F16:
		for i := range out {
			out[i] = F16ToFloat32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	case Q8_0:
		for i := 0; i < len(out)/32; i++ {
			blk := t.Data[34*i:]
			d := F16ToFloat32(binary.LittleEndian.Uint16(blk))
			for j := 0; j < 32; j++ {
				out[32*i+j] = d * float32(int8(blk[2+j]))
			}
		}
	}
	return out, nil
}

func checkCount(name string, dims []uint64, n int) error {
	p := uint64(1)
	for _, d := range dims {
		p *= d
	}
	if p != uint64(n) {
		return fmt.Errorf("gguf: tensor %q: dimensions %v hold %d values, got %d", name, dims, p, n)
	}
	return nil
}

// Float32ToF16 converts to IEEE 754 half precision bits, rounding to nearest
// even; NaN stays NaN, overflow becomes infinity, tiny values become
// subnormals or zero.
func Float32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign
		}
		m := mant | 0x800000
		shift := uint32(14 - e)
		half := uint32(1) << (shift - 1)
		r := m >> shift
		rem := m & ((1 << shift) - 1)
		if rem > half || (rem == half && r&1 == 1) {
			r++
		}
		return sign | uint16(r)
	}
	r := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && r&1 == 1) {
		r++ // may carry into the exponent, which is the correct rounding
	}
	return sign | uint16(r)
}

// F16ToFloat32 converts IEEE 754 half precision bits to float32 exactly.
func F16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0:
		// subnormal: normalise
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		mant &= 0x3ff
		return math.Float32frombits(sign | e<<23 | mant<<13)
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}
