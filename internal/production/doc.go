// Package production owns keeping production: which profile it is, and
// the keeper that starts, adopts and restores it.
//
// Which profile (docs/design.md "Serving and activation"): the
// configuration's [production] names the first production; after an
// activation, the latest switched record in the user's private state
// folder (Dir) names the active profile and its effective configuration
// (the launch variant applied). Every command resolves it through
// Resolve or ProfileFor. It owns those records and
// their history (0600 in a 0700 folder, written atomically), the switch
// intent that lets a later hiro recover a switch cut short, the lock
// that keeps two switches apart, and ConfigHash ("restored exactly").
//
// The keeper (Keeper): LeaseKeys, the one lease-key policy; Look, what a
// profile's state record says (none, stale, own, foreign, unmanaged);
// Start (recorded from launch: the one caller of supervisor.Start outside
// tests), StartDetached, StartVerified, Stop, Adopt, DropStale;
// StopRecorded and StopRecord (the one stop of a recorded process outside
// tests); Restore with attempts, resuming a restore cut short; Verify and
// the one Verification record (its JSON is the evidence's). The campaign
// and its guard, the activation switch, the router and 'hiro backend
// start|stop' call it.
//
// It must not decide when to restart or hand production over (the
// router and the campaign do), drive a switch (package activation), or
// rewrite the configuration file.
package production
