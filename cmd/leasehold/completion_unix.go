//go:build unix

package main

func init() { commandNamed("run").usage = runUsage }
