#!/usr/bin/env bash
# Install skyc with its test extra (and the system packages the tests use), then
# lint, type-check and run the whole test suite. This is what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || need_apt+=(openssh-server)
command -v rsync >/dev/null 2>&1 || need_apt+=(rsync)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
  else
    echo "note: ${need_apt[*]} missing and not root: the tests that need them will be skipped" >&2
  fi
fi

# The Pulumi SDKs (the `pulumi` extra, ~1.1 GB) are needed by the tests that run
# generated programs under Pulumi's mock runtime; they install once per machine.
python3 -m pip install -q -e '.[test,pulumi]'
python3 -m ruff check skyc tests benchmarks scripts
python3 -m mypy --strict skyc
# The tests run two at a time (each sshd node on a free port, each node user named for
# its test process). Those that drive terraform's AWS provider against moto spend most
# of their time waiting on the provider's polling: they run four at a time (those
# sharing the stand-in VMs, marked xdist_group("stand-in-vms"), in one worker one after
# another). Four terraform applies on two cores now and then lose an answer on loopback
# (the AWS SDK then fails a read, or sends a request again); an AWS test that fails is
# run once more, and the summary says so ("1 rerun"): one that fails twice fails the run.
python3 -m pytest -q -m "not aws" -n 2 --dist loadgroup "$@"
python3 -m pytest -q -m aws -n 4 --dist loadgroup --reruns 1 --reruns-delay 5 "$@"
