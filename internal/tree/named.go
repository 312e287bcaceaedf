package tree

// Named is a node that knows its name without a stat, which fails once
// the file is gone: a create that an invalid write undoes (sk/x.md)
// must still be named in the error the server reports.
type Named interface {
	Name() string
}

// Name returns the file's name in its directory.
func (f *DiskFile) Name() string { return f.name }

var _ Named = (*DiskFile)(nil)
