#!/bin/sh
# test.sh: install what the tests need, then run them all.
#   ./test.sh            everything (vet, gofmt, staticcheck, tests with -race)
#   ./test.sh -short     skip the slow end-to-end and benchmark-style tests
set -eu
cd "$(dirname "$0")"

# Debian packages the tests drive as a user would.
pkgs=""
for p in vim:vim tmux:tmux jq:jq fusermount3:fuse3 python3:python3 perl:perl gawk:gawk node:nodejs npm:npm; do
	cmd=${p%%:*} pkg=${p#*:}
	command -v "$cmd" >/dev/null 2>&1 || pkgs="$pkgs $pkg"
done
if [ -n "$pkgs" ]; then
	echo "test.sh: installing$pkgs" >&2
	SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $pkgs >/dev/null
fi

# The MCP servers the bridge tests run (internal/mcpbridge/mcptest), pinned,
# installed once outside the repository.
npmdir=${OLLIE_TEST_NPM:-$HOME/.cache/ollie-test/npm}
mcp_pkgs="@modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31"
if [ -n "${OLLIE_REQUIRE_NPM:-}" ] && ! command -v npm >/dev/null 2>&1; then
	echo "test.sh: npm is missing but OLLIE_REQUIRE_NPM is set" >&2
	exit 1
fi
if command -v npm >/dev/null 2>&1; then
	missing=""
	for p in $mcp_pkgs; do
		name=${p%@*}
		grep -qs "\"version\": \"${p##*@}\"" "$npmdir/node_modules/$name/package.json" || missing="$missing $p"
	done
	if [ -n "$missing" ]; then
		echo "test.sh: installing$missing into $npmdir" >&2
		mkdir -p "$npmdir"
		npm install --prefix "$npmdir" --no-audit --no-fund --save-exact --silent $missing
	fi
	export OLLIE_TEST_NPM="$npmdir"
fi

go mod download
echo "== gofmt"
bad=$(gofmt -l . | grep -v '^defaults/' || true)
if [ -n "$bad" ]; then echo "gofmt needed on:"; echo "$bad"; exit 1; fi
echo "== go vet"
go vet ./...
echo "== staticcheck"
if ! command -v staticcheck >/dev/null 2>&1 && [ ! -x "$(go env GOPATH)/bin/staticcheck" ]; then
	go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
PATH="$PATH:$(go env GOPATH)/bin" staticcheck ./...
echo "== go test -race"
go test -race -count=1 "$@" ./...

# == fuzz: the parsers of untrusted bytes, each for a bounded time (the
# corpus is in the packages' testdata/fuzz/). About 30 s in all.
echo "== fuzz"
go test -run='^$' -fuzz='^FuzzParse$' -fuzztime=15s ./internal/ninep
go test -run='^$' -fuzz='^FuzzServe$' -fuzztime=15s ./internal/ninep
# == end fuzz
