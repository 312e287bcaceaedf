package main

import "path/filepath"

func absolute(p string) (string, error) { return filepath.Abs(p) }
