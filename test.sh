#!/bin/sh
# test.sh: install what the tests need, then run them all.
#   ./test.sh            everything (vet, gofmt, staticcheck, tests with -race)
#   ./test.sh -short     skip the slow end-to-end and benchmark-style tests
set -eu
cd "$(dirname "$0")"

# Debian packages the tests drive as a user would.
pkgs=""
for p in vim:vim tmux:tmux jq:jq fusermount3:fuse3 python3:python3 perl:perl gawk:gawk; do
	cmd=${p%%:*} pkg=${p#*:}
	command -v "$cmd" >/dev/null 2>&1 || pkgs="$pkgs $pkg"
done
if [ -n "$pkgs" ]; then
	echo "test.sh: installing$pkgs" >&2
	SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $pkgs >/dev/null
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
