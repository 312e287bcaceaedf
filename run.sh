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
# ollie, and next to it the sandbox helper that confines every stage
# (docs/execute.md: the daemon refuses a helper of another build), the
# browser front-end that `ollie web` becomes (docs/web.md) and the MCP
# bridge that `ollie mcp` becomes (docs/mcp.md).
# Built aside, then copied in: the linker writes its output through a
# memory mapping, which the kernel caches in large folios, and a process
# maps a whole large folio at its first touch of any byte in it. A daemon
# started from the linker's own file kept 14 MB more of it resident than
# one started from a copy (idle RSS 17.5 against 4.9 MB; docs/bench.md).
# install(1) also replaces a running binary without touching its file.
# Static (CGO_ENABLED=0): no dynamic loader and no libc to map and start
# in each ollie process, which took 1.4 ms of every start of ollie and of
# its sandbox helper, and 0.7 MB of each one's memory (docs/bench.md).
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
CGO_ENABLED=0 go build -o "$build/" ./cmd/ollie ./cmd/ollie-sandbox ./cmd/ollie-web ./cmd/ollie-mcp
install -m 0755 "$build/ollie" "$build/ollie-sandbox" "$build/ollie-web" "$build/ollie-mcp" "$bindir/"
echo "built $bindir/ollie, and beside it ollie-sandbox, ollie-web and ollie-mcp"
"$bindir/ollie" stop >/dev/null
"$bindir/ollie" start ${nomount:-}
case ":$PATH:" in
*":$bindir:"*) ;;
*) echo "add $bindir to your PATH to type 'ollie' directly" ;;
esac

# Which backend the sessions will use, and whether it answers now (one
# request from here; the daemon itself never probes a backend).
first=$("$bindir/ollie" cat backends 2>/dev/null | head -n 1)
if [ -z "$first" ]; then
	echo "no backend is configured: see README (Configuration) or docs/backends.md"
else
	set -- $first
	echo "backend: $1 ($2) at $3${4:+, model $4}"
	if command -v curl >/dev/null 2>&1 && [ "$3" != "-" ]; then
		if curl -s -o /dev/null -m 3 "$3"; then
			echo "  it answers"
		else
			echo "  nothing answers at $3: start it (for Ollama: ollama serve), set OLLAMA_HOST," >&2
			echo "  or configure a backend in ~/.config/ollie/ollie.json or the environment" >&2
		fi
	fi
fi
