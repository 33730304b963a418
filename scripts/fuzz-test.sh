#!/usr/bin/env bash
# Tests scripts/fuzz.sh on a module of its own, with the real go command
# behind a wrapper that notes each call: every target of every package
# runs (an internal and an external test file, a module in a folder with a
# space in its name), each package is built once, and a target that fails stops
# the run, fails it and is named, with its failing input written where go
# test -fuzz writes it.
#
#   bash scripts/fuzz-test.sh    (about 2 s)
set -uo pipefail
cd "$(dirname "$0")/.."
failures=0
fail() {
	echo "FAIL $*"
	failures=$((failures + 1))
}
real_go=$(command -v "${GO:-go}") || {
	echo "fuzz-test: no go command"
	exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mod="$tmp/the module"
mkdir -p "$mod/scripts" "$mod/a" "$mod/b"
cp scripts/fuzz.sh "$mod/scripts/"
printf 'module fuzztest\n\ngo 1.24\n' >"$mod/go.mod"
printf 'package a\n\nfunc A(s string) int { return len(s) }\n' >"$mod/a/a.go"
cat >"$mod/a/a_test.go" <<'EOF'
package a

import (
	"os"
	"testing"
)

func FuzzLength(f *testing.F) {
	f.Add("seed")
	f.Fuzz(func(t *testing.T, s string) {
		if A(s) != len(s) {
			t.Fatal("length")
		}
	})
}

func FuzzOnlySeed(f *testing.F) {
	f.Add("seed")
	f.Fuzz(func(t *testing.T, s string) {
		if os.Getenv("FUZZTEST_BAD") != "" && s != "seed" {
			t.Fatalf("not the seed: %q", s)
		}
	})
}
EOF
printf 'package c\n\nfunc C(b []byte) int { return len(b) }\n' >"$mod/b/c.go"
cat >"$mod/b/c_test.go" <<'EOF'
package c_test

import (
	"testing"

	c "fuzztest/b"
)

func FuzzBytes(f *testing.F) {
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) { _ = c.C(b) })
}
EOF
cat >"$tmp/go" <<EOF
#!/usr/bin/env bash
echo "\$*" >>"$tmp/calls"
exec "$real_go" "\$@"
EOF
chmod +x "$tmp/go"
run() { GO="$tmp/go" FUZZTIME=20x bash "$mod/scripts/fuzz.sh" 2>&1; }

out=$(run)
status=$?
[ "$status" = 0 ] || fail "fuzz.sh: exit status $status, want 0"
for target in "a FuzzLength" "a FuzzOnlySeed" "b FuzzBytes"; do
	grep -q "^fuzz: fuzztest/$target (20x)$" <<<"$out" || fail "fuzz.sh: no line for $target"
done
grep -q "^fuzz: 3 targets of 2 packages: ok$" <<<"$out" || fail "fuzz.sh: no summary line for 3 targets of 2 packages"
builds=$(grep -c -- ' -c -fuzz ' "$tmp/calls")
[ "$builds" = 2 ] || fail "fuzz.sh: $builds builds, want one a package (2)"
grep -q -- '-fuzz ^Fuzz' "$tmp/calls" && fail "fuzz.sh: go test -fuzz ran a target (a build a target)"

: >"$tmp/calls"
out=$(FUZZTEST_BAD=1 run)
status=$?
[ "$status" = 1 ] || fail "fuzz.sh with a failing target: exit status $status, want 1"
grep -q "fuzz: fuzztest/a FuzzOnlySeed failed" <<<"$out" || fail "fuzz.sh: the failing target not named"
grep -q "not the seed" <<<"$out" || fail "fuzz.sh: the failing target's output not shown"
[ -n "$(ls "$mod/a/testdata/fuzz/FuzzOnlySeed" 2>/dev/null)" ] || fail "fuzz.sh: no failing input in a/testdata/fuzz/FuzzOnlySeed"
grep -q "FuzzBytes" <<<"$out" && fail "fuzz.sh: a target ran after a failed one"

[ "$failures" = 0 ] && echo "fuzz-test: ok" && exit 0
echo "$out" | tail -n 20
exit 1
