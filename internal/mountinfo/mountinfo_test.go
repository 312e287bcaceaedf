package mountinfo

import "testing"

func TestParse(t *testing.T) {
	table := `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
36 22 0:31 / /sys/fs/cgroup/pids rw shared:9 - cgroup cgroup rw,pids
90 22 0:50 /sub /home/u/my\040disk rw - vfat /dev/sdb1 rw
bad line
91 22 0:51 / /x rw - fuse.ollie`
	ms := parse(table)
	if len(ms) != 3 {
		t.Fatalf("%d mounts, want 3: %+v", len(ms), ms)
	}
	if m := ms[2]; m.Point != "/home/u/my disk" || m.Root != "/sub" || m.FSType != "vfat" {
		t.Errorf("escaped mount: %+v", m)
	}
	if m := ms[1]; m.FSType != "cgroup" || m.SuperOpts != "rw,pids" {
		t.Errorf("cgroup mount: %+v", m)
	}
}

func TestIsMountPoint(t *testing.T) {
	if !IsMountPoint("/") || !IsMountPoint("/proc") {
		t.Error("/ or /proc is not a mount point")
	}
	if IsMountPoint("/no/such/dir") {
		t.Error("a missing directory is a mount point")
	}
}

func FuzzParse(f *testing.F) {
	f.Add("22 1 8:1 / / rw - ext4 /dev/vda rw\n")
	f.Add(`1 2 3 \0 \1234 - a b c`)
	f.Fuzz(func(t *testing.T, table string) { parse(table) })
}
