// Package termtext makes text that hiro did not write (engine log lines,
// and the root causes and messages quoted from them) safe to print to a
// terminal: control bytes (ESC, BEL, backspace, carriage return...), C1
// controls and invalid UTF-8 are written as visible escapes (\x1b, \x07,
// \u009b, \xff) so that a log cannot clear the screen, set the window
// title, move the cursor or hide what precedes it. It also holds Plural,
// the one helper that makes a printed count agree with its noun.
//
// It owns no file and no output, and must not import any other hiro
// package.
package termtext
