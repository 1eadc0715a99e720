// Package failure holds hiro's failure vocabulary (docs/design.md
// "Failure vocabulary"): the phases an engine goes through, the classes a
// failure can have, the confidence of a verdict, the Failure record every
// failed attempt carries (with the rule that decided), and the serving
// Device a ready attempt reports. It owns no logic beyond ordering phases
// and naming a device; classification lives in package engine.
package failure
