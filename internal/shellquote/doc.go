// Package shellquote writes a word so that a POSIX shell reads it back as
// that one word: the paths and names hiro puts into the commands it
// suggests ("chmod 600 PATH", "hiro backend stop NAME") and into messages
// that name a folder.
//
// It owns no file and no output, and must not import any other hiro
// package.
package shellquote
