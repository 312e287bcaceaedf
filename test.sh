#!/bin/sh
# test.sh: install what the tests need, then run them all.
#   ./test.sh            everything (vet, gofmt, staticcheck, tests with -race)
#   ./test.sh -short     skip the slow end-to-end and benchmark-style tests
set -eu
cd "$(dirname "$0")"

# Debian packages the tests drive as a user would, checked by package
# name: a python3 or node found first on PATH (pyenv, nvm) is not the one
# the sandbox tests run (/usr/bin).
pkgs=""
for pkg in vim tmux jq fuse3 python3 perl gawk dash util-linux git chromium; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || pkgs="$pkgs $pkg"
done
# Node and npm may come from elsewhere (Node 20 with its own npm); Debian's
# npm would conflict with such a nodejs, so they are checked by command.
for p in node:nodejs npm:npm; do
	command -v "${p%%:*}" >/dev/null 2>&1 || pkgs="$pkgs ${p#*:}"
done
if [ -n "$pkgs" ]; then
	echo "test.sh: installing$pkgs" >&2
	SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $pkgs >/dev/null
fi

# The MCP servers the bridge tests run (internal/mcpbridge/mcptest), pinned,
# installed once outside the repository.
npmdir=${OLLIE_TEST_NPM:-$HOME/.cache/ollie-test/npm}
mcp_pkgs="@modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/server-memory@2026.8.31 gpt-tokenizer@4.0.0"
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
bad=$(gofmt -l . || true)
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

# == fuzz: every parser of untrusted bytes, each for a bounded number of
# inputs (the corpus is in the packages' testdata/fuzz/). A count, not a
# time: Go 1.26's fuzzer can fail a target with "context deadline
# exceeded" when -fuzztime runs out while a worker is starved of CPU
# (go.dev/issue/75804, fixed in Go 1.27); a count has no deadline. About
# a minute and a half here.
echo "== fuzz"
# One target per line: package:Fuzz function:inputs.
for t in \
	./internal/ninep:FuzzParse:100000x \
	./internal/ninep:FuzzServe:50000x \
	./internal/ninep/client:FuzzFindPin:30000x \
	./internal/ns:FuzzMessageUTF8:30000x \
	./internal/ns:FuzzParseKV:30000x \
	./internal/ns:FuzzValidPrefixes:20000x \
	./internal/valid:FuzzText:8000x \
	./internal/redact:FuzzString:30000x \
	./internal/agentcfg:FuzzParse:30000x \
	./internal/config:FuzzConfig:50000x \
	./internal/mcpconf:FuzzParseServers:30000x \
	./internal/mountinfo:FuzzParse:20000x \
	./internal/batch:FuzzParseSpec:60000x \
	./internal/session:FuzzLoadQueue:3000x \
	./internal/backend:FuzzDecoders:30000x \
	./internal/backend:FuzzOpenAIChunkAsTheSDK:30000x \
	./internal/backend:FuzzOpenAIChunkWalk:30000x \
	./internal/backend:FuzzSSEAsTheSDK:30000x \
	./internal/backend:FuzzAnthropicAsTheSDK:20000x \
	./internal/backend:FuzzAnthropicEventWalk:30000x \
	./internal/bench:FuzzMarkerScanner:30000x \
	./internal/web:FuzzChat:10000x; do
	pkg=${t%%:*} rest=${t#*:}
	go test -run='^$' -fuzz="^${rest%%:*}\$" -fuzztime="${rest#*:}" "$pkg"
done
# == end fuzz
