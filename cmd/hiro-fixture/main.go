// Command hiro-fixture writes hiro's own model files.
//
//	hiro-fixture tiny --out FILE [--seed N]
//	    the tiny llama GGUF with deterministic random weights (about 250 KB)
//	hiro-fixture convert --in WEIGHTS.safetensors --out FILE.gguf [--name NAME] [--type f16|q8_0|f32]
//	    a model trained by train/train_fixture.py, as GGUF
//	hiro-fixture shape --shape NAME --out FILE.gguf [--type f16|q8_0|f32] [--seed N] [--sparse]
//	    a llama model of a real shape (llama-3.2-1b, llama-3.2-3b, llama-3.1-8b)
//	    with random weights streamed to the file, or with --sparse only its
//	    header (a sparse file of its full size): what memory estimates read
//	hiro-fixture modelfile [--from ./model.gguf]
//	    print the Ollama Modelfile (chat template, greedy decoding) for a fixture GGUF
//
// Exit status: 0 done, 1 failed, 2 bad usage.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hiro-dev/hiro/internal/fixture"
	"github.com/hiro-dev/hiro/internal/gguf"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

const usage = `usage:
  hiro-fixture tiny --out FILE [--seed N]
  hiro-fixture convert --in WEIGHTS.safetensors --out FILE.gguf [--name NAME] [--type f16|q8_0|f32]
  hiro-fixture shape --shape NAME --out FILE.gguf [--type f16|q8_0|f32] [--seed N] [--sparse]
  hiro-fixture modelfile [--from ./model.gguf]
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("hiro-fixture "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "GGUF file to write")
	switch args[0] {
	case "tiny":
		seed := fs.Uint64("seed", 1, "random seed of the weights")
		if fs.Parse(args[1:]) != nil || *out == "" || fs.NArg() > 0 {
			fmt.Fprint(stderr, "hiro-fixture tiny: --out FILE is required\n"+usage)
			return 2
		}
		f, err := fixture.Tiny(*seed)
		return write(f, err, *out, stdout, stderr)
	case "convert":
		in := fs.String("in", "", "safetensors file written by train/train_fixture.py")
		name := fs.String("name", "", "general.name (default: the output file name without .gguf)")
		typ := fs.String("type", "f16", "tensor type of the matrices: f16, q8_0 or f32")
		if fs.Parse(args[1:]) != nil || *out == "" || *in == "" || fs.NArg() > 0 {
			fmt.Fprint(stderr, "hiro-fixture convert: --in and --out are required\n"+usage)
			return 2
		}
		tt, ok := tensorTypes[*typ]
		if !ok {
			fmt.Fprintf(stderr, "hiro-fixture convert: --type %q: use f16, q8_0 or f32\n", *typ)
			return 2
		}
		if *name == "" {
			base := *out
			if i := strings.LastIndex(base, "/"); i >= 0 {
				base = base[i+1:]
			}
			*name = strings.TrimSuffix(base, ".gguf")
		}
		f, err := fixture.Convert(*in, *name, tt)
		return write(f, err, *out, stdout, stderr)
	case "shape":
		shape := fs.String("shape", "", "model shape: "+strings.Join(fixture.ShapeNames(), ", "))
		typ := fs.String("type", "q8_0", "tensor type of the matrices: f16, q8_0 or f32")
		seed := fs.Uint64("seed", 1, "random seed of the weights")
		sparse := fs.Bool("sparse", false, "write the header only (a sparse file of the full size, zero weights)")
		if fs.Parse(args[1:]) != nil || *out == "" || fs.NArg() > 0 {
			fmt.Fprint(stderr, "hiro-fixture shape: --shape and --out are required\n"+usage)
			return 2
		}
		s, ok := fixture.Shapes[*shape]
		if !ok {
			fmt.Fprintf(stderr, "hiro-fixture shape: --shape %q: use one of %s\n", *shape, strings.Join(fixture.ShapeNames(), ", "))
			return 2
		}
		tt, ok := tensorTypes[*typ]
		if !ok {
			fmt.Fprintf(stderr, "hiro-fixture shape: --type %q: use f16, q8_0 or f32\n", *typ)
			return 2
		}
		f, err := fixture.ShapeFile(s, tt)
		if err != nil {
			fmt.Fprintf(stderr, "hiro-fixture: %v\n", err)
			return 1
		}
		var n int64
		if *sparse {
			n, err = f.WriteSparseFile(*out)
		} else {
			n, err = writeStream(f, *out, fixture.RandomFill(f, *seed))
		}
		if err != nil {
			fmt.Fprintf(stderr, "hiro-fixture: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "wrote %s: %d bytes, %d tensors, %d metadata keys\n", *out, n, len(f.Tensors), len(f.KV))
		return 0
	case "modelfile":
		from := fs.String("from", "./model.gguf", "the GGUF path as the Modelfile's FROM line gives it")
		if fs.Parse(args[1:]) != nil || fs.NArg() > 0 {
			return 2
		}
		fmt.Fprint(stdout, fixture.Modelfile(*from))
		return 0
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "hiro-fixture: unknown command %q\n%s", args[0], usage)
	return 2
}

func write(f *gguf.File, err error, out string, stdout, stderr io.Writer) int {
	if err != nil {
		fmt.Fprintf(stderr, "hiro-fixture: %v\n", err)
		return 1
	}
	n, err := f.WriteFile(out)
	if err != nil {
		fmt.Fprintf(stderr, "hiro-fixture: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s: %d bytes, %d tensors, %d metadata keys\n", out, n, len(f.Tensors), len(f.KV))
	return 0
}

// tensorTypes are the --type values.
var tensorTypes = map[string]gguf.TensorType{"f16": gguf.F16, "q8_0": gguf.Q8_0, "f32": gguf.F32}

// writeStream writes f with fill's data to out through a temporary file
// in the same directory, renamed when complete.
func writeStream(f *gguf.File, out string, fill gguf.Fill) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(out), ".gguf-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	n, err := f.WriteStream(tmp, fill)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), out)
	}
	return n, err
}
