#!/usr/bin/env bash
# Write the lock files the README's two commands install from, with hashes:
#   requirements/skyc.lock   what `pip install .` needs to run skyc
#   requirements/test.lock   skyc with its test, pulumi, kubernetes and serve extras (the suite)
#   requirements/tools.lock  the installer the test script bootstraps (uv)
# Resolved for every platform and every Python skyc supports (>= 3.10), from the ranges
# in pyproject.toml, to the newest versions they allow today. Refresh: ./scripts/lock.sh
set -euo pipefail
cd "$(dirname "$0")/.."

UV_VERSION=0.13.9
uv=(uv)
if ! command -v uv >/dev/null 2>&1 || [ "$(uv --version | cut -d' ' -f2)" != "$UV_VERSION" ]; then
  tools=$(mktemp -d)
  trap 'rm -rf "$tools"' EXIT
  python3 -m venv "$tools"
  "$tools/bin/python" -m pip install -q "uv==$UV_VERSION"
  uv=("$tools/bin/uv")
fi

compile=("${uv[@]}" pip compile --quiet --universal --python-version 3.10 --generate-hashes
         --custom-compile-command ./scripts/lock.sh)
"${compile[@]}" pyproject.toml --extra test --extra pulumi --extra kubernetes --extra serve \
  -o requirements/test.lock
# The run lock takes the test lock's versions, so both commands install the same skyc.
"${compile[@]}" pyproject.toml -c requirements/test.lock -o requirements/skyc.lock
echo "uv==$UV_VERSION" | "${compile[@]}" - -o requirements/tools.lock
echo "wrote requirements/test.lock, requirements/skyc.lock, requirements/tools.lock"
