package preflight

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// maxHeaderBytes bounds a safetensors header (the format's own limit is
// 100 MB).
const maxHeaderBytes = 100 << 20

// dtypeBytes are the safetensors dtypes and their element sizes.
var dtypeBytes = map[string]uint64{
	"F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2, "U16": 2,
	"F8_E4M3": 1, "F8_E5M2": 1, "I8": 1, "U8": 1, "BOOL": 1,
}

// Tensor is one tensor of a safetensors header.
type Tensor struct {
	Name  string
	DType string
	Shape []uint64
	Bytes uint64
}

// Weights are the tensors of an artifact's safetensors files.
type Weights struct {
	Files   []string
	Tensors []Tensor
	// BytesByDType sums the tensors' data by dtype.
	BytesByDType map[string]uint64
	Total        uint64
}

// ReadSafetensors reads the headers of every *.safetensors file in dir
// (no tensor data is read). A truncated header, an unknown dtype or a
// tensor whose byte range disagrees with its shape is an error naming the
// file and the tensor.
func ReadSafetensors(dir string) (*Weights, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.safetensors file in %s", dir)
	}
	sort.Strings(files)
	w := &Weights{Files: files, BytesByDType: map[string]uint64{}}
	for _, f := range files {
		ts, err := readHeader(f)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			w.Tensors = append(w.Tensors, t)
			w.BytesByDType[t.DType] += t.Bytes
			w.Total += t.Bytes
		}
	}
	return w, nil
}

func readHeader(path string) ([]Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var n uint64
	if err := binary.Read(f, binary.LittleEndian, &n); err != nil {
		return nil, fmt.Errorf("%s: truncated safetensors header (no 8-byte length)", path)
	}
	if n > maxHeaderBytes || n > uint64(st.Size())-8 {
		return nil, fmt.Errorf("%s: truncated safetensors header: it claims %d bytes, the file has %d after the length", path, n, st.Size()-8)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("%s: truncated safetensors header: %w", path, err)
	}
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(b, &hdr); err != nil {
		return nil, fmt.Errorf("%s: safetensors header is not JSON: %w", path, err)
	}
	data := uint64(st.Size()) - 8 - n
	var out []Tensor
	for name, raw := range hdr {
		if name == "__metadata__" {
			continue
		}
		var t struct {
			DType   string   `json:"dtype"`
			Shape   []uint64 `json:"shape"`
			Offsets []uint64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("%s: tensor %s: %w", path, name, err)
		}
		eb, ok := dtypeBytes[t.DType]
		if !ok {
			return nil, fmt.Errorf("%s: tensor %s: unknown dtype %q", path, name, t.DType)
		}
		if len(t.Offsets) != 2 || t.Offsets[1] < t.Offsets[0] {
			return nil, fmt.Errorf("%s: tensor %s: data_offsets %v are not [begin, end]", path, name, t.Offsets)
		}
		elems := uint64(1)
		for _, d := range t.Shape {
			elems *= d
		}
		size := t.Offsets[1] - t.Offsets[0]
		if size != elems*eb {
			return nil, fmt.Errorf("%s: tensor %s: %d bytes for shape %v of %s (%d needed)", path, name, size, t.Shape, t.DType, elems*eb)
		}
		if t.Offsets[1] > data {
			return nil, fmt.Errorf("%s: tensor %s ends at byte %d of %d: the file is truncated", path, name, t.Offsets[1], data)
		}
		out = append(out, Tensor{Name: name, DType: t.DType, Shape: t.Shape, Bytes: size})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ModelConfig is what a Hugging Face config.json says that memory and
// kernels depend on.
type ModelConfig struct {
	Architectures         []string `json:"architectures"`
	ModelType             string   `json:"model_type"`
	HiddenSize            int      `json:"hidden_size"`
	IntermediateSize      int      `json:"intermediate_size"`
	NumHiddenLayers       int      `json:"num_hidden_layers"`
	NumAttentionHeads     int      `json:"num_attention_heads"`
	NumKeyValueHeads      int      `json:"num_key_value_heads"`
	HeadDim               int      `json:"head_dim"`
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	VocabSize             int      `json:"vocab_size"`
	TorchDType            string   `json:"torch_dtype"`
	// Quantization is quantization_config (AWQ, GPTQ, FP8, ...).
	Quantization *QuantConfig `json:"quantization_config"`
	// TextConfig holds the language model's fields in multimodal
	// configs (Mistral 3, Gemma 3): read when the top level has none.
	TextConfig *ModelConfig `json:"text_config"`
}

// QuantConfig is a config.json's quantization_config.
type QuantConfig struct {
	QuantMethod string `json:"quant_method"`
	Bits        int    `json:"bits"`
	GroupSize   int    `json:"group_size"`
	// Format is compressed-tensors' format ("pack-quantized", ...).
	Format string `json:"format"`
}

// ReadConfig reads dir/config.json; a missing file or one without the
// layer and head counts is an error saying so.
func ReadConfig(dir string) (*ModelConfig, error) {
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no config.json in %s: the model's layers and heads are unknown", dir)
	}
	if err != nil {
		return nil, err
	}
	var c ModelConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "config.json"), err)
	}
	if c.NumHiddenLayers == 0 && c.TextConfig != nil {
		q := c.Quantization
		c = *c.TextConfig
		if c.Quantization == nil {
			c.Quantization = q
		}
	}
	if c.NumHiddenLayers <= 0 || c.NumAttentionHeads <= 0 || c.HiddenSize <= 0 {
		return nil, fmt.Errorf("%s: num_hidden_layers, num_attention_heads or hidden_size missing", filepath.Join(dir, "config.json"))
	}
	if c.NumKeyValueHeads <= 0 {
		c.NumKeyValueHeads = c.NumAttentionHeads
	}
	if c.HeadDim <= 0 {
		c.HeadDim = c.HiddenSize / c.NumAttentionHeads
	}
	return &c, nil
}

// QuantMethod is the model's quantisation method in lower case ("awq",
// "gptq", "fp8", "compressed-tensors"), or the launch's --quantization,
// or "".
func (c *ModelConfig) QuantMethod(l Launch) string {
	if l.Quantization != "" {
		return strings.ToLower(l.Quantization)
	}
	if c.Quantization != nil {
		return strings.ToLower(c.Quantization.QuantMethod)
	}
	return ""
}

// dtypeSize is the element size of config.json's torch_dtype.
func dtypeSize(t string) uint64 {
	switch strings.ToLower(t) {
	case "float32":
		return 4
	case "float8_e4m3fn", "float8_e5m2":
		return 1
	}
	return 2
}
