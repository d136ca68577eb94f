#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# Every file of the repository carries the license's SPDX line and the copyright line in its first lines,
# but for the ones that cannot or need not: LICENSE itself, and the Debian files whose formats have no
# comments (debian/changelog, debian/source/format) or that state the license (debian/copyright). Needs the git checkout (skipped in a tree unpacked from a tarball).
set -u
top=${srcdir:-.}
if ! git -C "$top" rev-parse --show-toplevel >/dev/null 2>&1; then
  echo "SKIP: not a git checkout"
  exit 77
fi
[ -f "$top/LICENSE" ] && grep -q '^BSD 3-Clause License$' "$top/LICENSE" || { echo "FAIL: LICENSE is not BSD-3-Clause"; exit 1; }
fail=0
n=0
for f in $(git -C "$top" ls-files); do
  case "$f" in
  LICENSE | debian/changelog | debian/source/format | debian/copyright) continue ;;
  esac
  n=$((n + 1))
  head -n 6 "$top/$f" | grep -q 'SPDX-License-Identifier: BSD-3-Clause' || { echo "FAIL: $f has no SPDX line"; fail=1; }
  head -n 6 "$top/$f" | grep -q 'Copyright (c) 20[0-9-]* the coll/gpu authors' || { echo "FAIL: $f has no copyright line"; fail=1; }
done
echo "$n files checked"
exit $fail
