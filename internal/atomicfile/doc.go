// Package atomicfile writes files so that a reader (or a crash) sees
// either the old content or the new, never a part: write a temporary file
// in the same directory, fsync it, rename it over the target, fsync the
// directory. It also says whether an output folder's path can be a
// directory at all (CheckDirPath), for the commands that write one.
package atomicfile
