package termtext

import "strconv"

// Plural is "1 request" or "3 requests": n and the noun that agrees with
// it, for every count hiro prints in prose (errors, progress lines,
// journal and report text). It lives here, in a package that imports no
// other hiro package, so that every package can use the one helper.
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
