// Package production is the one source of truth for "which profile is
// production" (docs/design.md "Serving and activation"). The configuration's
// [production] names the first production; after an activation, the
// latest switched record in the user's private state folder (Dir) names
// the active profile and its effective configuration (the profile with the
// launch variant's environment and arguments applied) and that
// configuration's hash. Every command that needs production (the campaign
// guard and its restore, lease recovery, 'hiro backend start', the router)
// resolves it through Resolve or ProfileFor.
//
// It owns: the records and their history (one JSON document per activation
// or rollback, 0600 in a 0700 folder, written atomically), the switch
// intent that lets a later hiro recover a switch cut short, the exclusive
// lock that keeps two switches apart, and ConfigHash (what "restored
// exactly" compares).
//
// It must not start, stop or probe processes (package supervisor does, and
// package activation drives the switch), and it never rewrites the
// configuration file.
package production
