#!/bin/sh
# run.sh: build ollie, start the daemon and mount the tree at ~/mnt/ollie.
# Safe to run again: it rebuilds, and restarts a daemon that is running.
set -eu
cd "$(dirname "$0")"

need_go="1.26"
if ! command -v go >/dev/null 2>&1; then
	echo "run.sh: Go $need_go or newer is needed: https://go.dev/dl/ (or apt-get install golang on a recent Debian)" >&2
	exit 1
fi
have=$(go env GOVERSION | sed 's/^go//')
if [ "$(printf '%s\n%s\n' "$need_go" "$have" | sort -V | head -1)" != "$need_go" ]; then
	echo "run.sh: Go $have is too old; ollie needs Go $need_go or newer" >&2
	exit 1
fi
if [ ! -e /dev/fuse ]; then
	echo "run.sh: /dev/fuse is missing: load the fuse module (modprobe fuse); ollie will run without a mount" >&2
	nomount=-nomount
fi
if [ "$(id -u)" != 0 ] && ! command -v fusermount3 >/dev/null 2>&1 && ! command -v fusermount >/dev/null 2>&1; then
	echo "run.sh: installing fuse3 (fusermount3 lets a normal user mount)" >&2
	sudo apt-get update -qq && sudo apt-get install -y -qq fuse3
fi

bindir=${OLLIE_BIN:-$HOME/.local/bin}
mkdir -p "$bindir"
go build -o "$bindir/ollie" ./cmd/ollie
echo "built $bindir/ollie"
"$bindir/ollie" stop >/dev/null
"$bindir/ollie" start ${nomount:-}
case ":$PATH:" in
*":$bindir:"*) ;;
*) echo "add $bindir to your PATH to type 'ollie' directly" ;;
esac
