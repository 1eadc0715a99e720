// Package stats owns the statistics behind hiro's verdicts (docs/qualify.md
// "Verdicts that state their uncertainty"): the paired bootstrap of a
// micro-averaged difference over documents, the one-sided non-inferiority
// decision on it, the sample size a margin needs,
// the Mann-Whitney rank test with the Hodges-Lehmann shift and its
// interval, a bootstrap interval of a ratio of means, and Clopper-Pearson
// intervals of a binomial proportion.
//
// Distributions and quantiles come from gonum (stat, stat/distuv); the
// resampling loops are here. Every function is pure: same inputs and seed,
// same result, bit for bit (the generator is PCG, whose sequence is fixed
// by its definition).
//
// It imports no other hiro package: gates (package qualify) and renderers
// (package account) call it.
package stats
