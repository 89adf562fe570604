//go:build !unix

package embeddedzk

func maxFDs() uint64 { return 0 }
