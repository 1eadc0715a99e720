//go:build tools

package deps

import (
	_ "github.com/BurntSushi/toml"
	_ "github.com/gorilla/feeds"
	_ "github.com/invopop/jsonschema"
	_ "github.com/neurosnap/sentences"
	_ "github.com/openai/openai-go/v3"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/spf13/cobra"
	_ "github.com/yuin/goldmark"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/term"
)
