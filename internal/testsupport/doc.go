// Package testsupport holds the helpers every test package shares, once:
// a free loopback port (FreePort) and the project's commands built once per
// test binary (Build, FakeEngine, Hiro; Cleanup removes what was built and
// TestMain calls it after m.Run) and the list of failure-log case sets
// (CaseSetDirs; engine.LoadCaseSet is their one loader); WaitFor, the one
// wait on a condition (never a bare sleep for something to happen).
//
// It is imported by tests only. It must not start engines or hold
// knowledge of any engine kind (package ollamatest starts the reference
// engine and uses FreePort from here).
package testsupport
