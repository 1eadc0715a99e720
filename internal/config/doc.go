// Package config owns hiro's configuration file: backend profiles (how to
// run or reach one inference server) and the production section. One
// loader (Load) fills defaults, decodes strictly (unknown keys are errors)
// and validates, with every message prefixed by the path of the offending
// key and saying what to do. An unknown key names its line and the known
// key nearest in spelling (did you mean); an unknown table is one error,
// not one per key inside it. A configuration that fails to load starts and
// stops nothing, except that LoadAbout, for a command about one profile,
// leaves out other profiles that do not validate and names them.
//
// It must not start processes or make network calls; paths are resolved
// relative to the configuration file's directory but never checked for
// existence here (that is the supervisor's and the prereq gate's job).
// An API key is never held in the configuration: a profile names the
// environment variable or file it comes from, and Profile.APIKey reads it
// only when a client is built (Load never does); a literal key written in
// the file is refused with a message saying where to put it instead.
//
// Engine kinds are checked against package engine's registry
// (EngineKinds), so config knows no kind by name; package engine must
// therefore never import config.
package config
