#!/usr/bin/env bash
# Install skyc with its test extras into a fresh virtual environment (from the lock,
# with hashes; the system packages the tests use from apt), then lint, type-check and
# run the whole test suite. This is what CI runs (.ci/run).
#
#   ./scripts/test.sh [PYTEST ARGS...]           against requirements/test.lock
#   ./scripts/test.sh --latest [PYTEST ARGS...]  against the newest versions pyproject's
#                                                ranges allow today, with a report of
#                                                what differs from the lock
# Environment: PYTHON (default python3) is the interpreter the environment is made from;
# SKYC_TEST_VENV (default .venv-test) is where; it is made anew on every run. Downloads
# are cached by uv (~/.cache/uv), so a second run installs in seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

latest=0
if [ "${1:-}" = "--latest" ]; then
  latest=1
  shift
fi
python=${PYTHON:-python3}
venv=${SKYC_TEST_VENV:-.venv-test}
lock=requirements/test.lock

need_apt=()
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || need_apt+=(openssh-server)
command -v rsync >/dev/null 2>&1 || need_apt+=(rsync)
command -v sudo >/dev/null 2>&1 || need_apt+=(sudo)
command -v rclone >/dev/null 2>&1 || need_apt+=(rclone)
command -v fusermount3 >/dev/null 2>&1 || need_apt+=(fuse3)
command -v node >/dev/null 2>&1 || need_apt+=(nodejs)  # Azurite runs on it
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
  else
    echo "note: ${need_apt[*]} missing and not root: the tests that need them will be skipped" >&2
  fi
fi
# Azurite, the Azure Blob emulator the storage tests mount containers from, from npm into
# the user's cache (where tests/support/emulators.py finds it), once per version. 3.35.0
# is the last that says it runs on Debian 12's nodejs (18); later ones ask for node 21+.
azurite_version=3.35.0
azurite_dir="${XDG_CACHE_HOME:-$HOME/.cache}/skyc-azurite"
if command -v npm >/dev/null 2>&1 && [ "$(node -p 'require(process.argv[1]).version' \
    "$azurite_dir/node_modules/azurite/package.json" 2>/dev/null)" != "$azurite_version" ]; then
  started=$SECONDS
  if npm install --prefix "$azurite_dir" --no-audit --no-fund --no-save --loglevel=error \
      "azurite@$azurite_version"; then
    echo "azurite $azurite_version: installed in $((SECONDS - started)) s"
  else
    echo "note: installing azurite failed: the Azure storage tests will be skipped" >&2
  fi
fi

# A fresh environment each run: what a newcomer's clone gets, nothing left from before.
started=$SECONDS
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --require-hashes \
  -r requirements/tools.lock
uv=("$venv/bin/uv" pip install --quiet --python "$venv/bin/python")
if [ "$latest" = 1 ]; then
  # The Pulumi SDKs (the `pulumi` extra, ~1.1 GB) are needed by the tests that run
  # generated programs under Pulumi's mock runtime.
  lock="$venv/latest.txt"
  "$venv/bin/uv" pip compile --quiet --python "$venv/bin/python" --upgrade pyproject.toml \
    --extra test --extra pulumi --extra kubernetes -o "$lock"
  "${uv[@]}" -r "$lock"
else
  "${uv[@]}" --require-hashes -r "$lock"
fi
"${uv[@]}" --no-deps -e .
export VIRTUAL_ENV="$PWD/$venv"
export PATH="$VIRTUAL_ENV/bin:$PATH"
echo "python: $("$venv/bin/python" -c 'import sys; print(sys.version.split()[0], sys.executable)')"
echo "lock: $lock (sha256 $(sha256sum "$lock" | cut -c1-12)); installed in $((SECONDS - started)) s"
if [ "$latest" = 1 ]; then
  echo "versions that differ from requirements/test.lock (locked -> newest):"
  join -a2 -e '(new)' -o 0,1.2,2.2 \
      <(grep -oE '^[A-Za-z0-9_.-]+==[^ ;]+' requirements/test.lock | sed 's/==/ /' | sort -u -k1,1) \
      <(grep -oE '^[A-Za-z0-9_.-]+==[^ ;]+' "$lock" | sed 's/==/ /' | sort -u -k1,1) \
    | awk '$2 != $3 {print "  " $1 ": " $2 " -> " $3; n++} END {if (!n) print "  (none)"}'
fi

python -m ruff check skyc tests benchmarks scripts
python -m mypy --strict skyc
# The tests run two at a time (each sshd node on a free port, each node user named for
# its test process). Those that drive terraform's AWS provider against moto spend most
# of their time waiting on the provider's polling: they run four at a time (those
# sharing the stand-in VMs, marked xdist_group("stand-in-vms"), in one worker one after
# another). Four terraform applies on two cores now and then lose an answer on loopback
# (the AWS SDK then fails a read, or sends a request again); an AWS test that fails is
# run once more, and the summary says so ("1 rerun"): one that fails twice fails the run.
# With PYTEST ARGS that pick tests of one kind only, the other stage finds none (pytest's
# exit 5): that is fine when some stage ran tests; the whole suite must run both.
status=0
python -m pytest -q -m "not aws" -n 2 --dist loadgroup "$@" || status=$?
if [ "$status" = 0 ] || { [ "$status" = 5 ] && [ $# -gt 0 ]; }; then
  first=$status
  status=0
  python -m pytest -q -m aws -n 4 --dist loadgroup --reruns 1 --reruns-delay 5 "$@" \
    || status=$?
  if [ "$status" = 5 ] && [ $# -gt 0 ] && [ "$first" = 0 ]; then
    status=0
  fi
fi
if [ "$latest" = 1 ]; then
  if [ "$status" = 0 ]; then
    echo "newest versions: the suite passes"
  else
    echo "newest versions: the suite FAILS (exit $status); the versions above differ from the lock"
  fi
fi
exit "$status"
