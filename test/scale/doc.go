// Package scale measures the registry, providers, consumers and the
// console at the scale of a large Dubbo deployment. It has no API;
// everything is in its tests and benchmarks.
package scale
