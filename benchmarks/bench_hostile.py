"""Hostile task files get a clean verdict fast: time and memory ceilings per file.

Every file of ``tests/fixtures/task/hostile/`` (alias bombs under each field,
merge-key bombs, deep nesting, huge numbers), plus ``/dev/zero``,
``/dev/urandom`` and a FIFO, is given to ``validate``, ``plan``, ``compile``,
``apply`` and ``exec`` (on a cluster that does not exist: the file is judged
first); each run must exit non-zero without a traceback within ``--budget``
seconds of wall time (2) and ``--memory`` MiB of peak RSS (200).
Then every other kind of file skyc reads (the config, policy files, ``--env-file``,
``--catalog`` files, a Kubernetes node cache, a saved plan) is made hostile as
``tests/support/hostile_inputs.py`` makes it (``/dev/zero``, a symlink to it, a FIFO,
a binary file, deep nesting, an oversize file, a gzip bomb, too many values or rows) and
read by the command that reads it, under the same ceilings; its error must name it.
Then large honest files (2,000 documents; 80,000 envs) are validated at full
and half size: each must pass, and doubling the input must not more than
``--ratio`` (3) times the CPU time (linear, with start-up included).

    python benchmarks/bench_hostile.py [--runs N] [--budget S] [--memory MIB]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import ROOT, bench_env, load_average, skyc_command, time_runs

sys.path.insert(0, str(ROOT))

HOSTILE = sorted((ROOT / "tests" / "fixtures" / "task" / "hostile").glob("*.yaml"))
COMMANDS = (("validate",), ("plan", "--no-diff"), ("compile", "-o", "{out}"), ("apply", "-y"),
            ("exec", "no-such-cluster"))


def refusal(cmd: list[str], env: dict[str, str], timeout: float, named: str | None = None,
            cwd: Path = ROOT) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MiB, problem or '') of a run that must fail cleanly (and,
    given ``named``, with an error that names it)."""
    with tempfile.TemporaryFile("w+") as err_file:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err_file, text=True)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - start > timeout:
                proc.kill()
                os.wait4(proc.pid, 0)
                return timeout, 0.0, f"still running after {timeout:.0f} s"
            time.sleep(0.01)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err_file.seek(0)
        err = err_file.read()
    rss = usage.ru_maxrss / 1024
    if proc.returncode == 0:
        return wall, rss, "exited 0"
    if "Traceback" in err or "error" not in err.lower():
        return wall, rss, f"no clean error: {err[-300:]!r}"
    if named is not None and named not in err:
        return wall, rss, f"the error does not name {named}: {err[-300:]!r}"
    return wall, rss, ""


def targets(tmp: Path) -> list[Path]:
    fifo = tmp / "fifo.yaml"
    os.mkfifo(fifo)
    return [*HOSTILE, Path("/dev/zero"), Path("/dev/urandom"), fifo]


def other_inputs(tmp: Path, base: dict[str, str], args: argparse.Namespace) -> list[str]:
    """Each hostile input of every other kind, read by its command: the failures."""
    from tests.support.hostile_inputs import all_cases, scenario

    failures = []
    print(f"other inputs, each read once; ceilings {args.budget:.1f} s, {args.memory:.0f} MiB:")
    for kind, case in all_cases():
        root = tmp / f"{kind}-{case}"
        root.mkdir()
        found = scenario(root, kind, case)
        if found is None:
            continue
        env = {k: v for k, v in base.items() if k != "KUBECONFIG"} | found.env
        wall, rss, problem = refusal(skyc_command(*found.args), env, max(10.0, args.budget * 5),
                                     named=found.shown, cwd=root)
        label = f"{kind} {case}"
        print(f"{label:<28} {found.args[0]:<9} {wall:6.2f} s {rss:7.1f} MiB"
              + (f"  FAIL: {problem}" if problem else ""))
        failures += [f"{label}: {problem}"] if problem else []
        failures += [f"{label}: {wall:.2f} s > {args.budget} s"] if wall > args.budget else []
        failures += [f"{label}: {rss:.0f} MiB > {args.memory}"] if rss > args.memory else []
    return failures


def big_files(tmp: Path) -> dict[str, tuple[Path, Path]]:
    def docs(n: int) -> str:
        return "\n---\n".join(f"name: t{i}\nrun: echo {i}\nresources:\n  cpus: 2\n"
                              for i in range(n))

    def envs(n: int) -> str:
        return "name: e\nrun: echo\nenvs:\n" + "".join(f"  K{i}: v{i}\n" for i in range(n))

    out = {}
    for name, make, n in (("2,000 documents", docs, 2000), ("80,000 envs", envs, 80000)):
        full, half = tmp / f"{n}.yaml", tmp / f"{n // 2}.yaml"
        full.write_text(make(n))
        half.write_text(make(n // 2))
        out[name] = (half, full)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--budget", type=float, default=2.0)
    parser.add_argument("--memory", type=float, default=200.0)
    parser.add_argument("--ratio", type=float, default=3.0)
    args = parser.parse_args()
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        env = bench_env(SKYC_HOME=str(tmp / "home"), NO_COLOR="1")
        print(f"hostile files, each command once; ceilings {args.budget:.1f} s, "
              f"{args.memory:.0f} MiB; {load_average()}")
        for path in targets(tmp):
            for command in COMMANDS:
                cmd = skyc_command(command[0], *[c.format(out=tmp / "out") for c in command[1:]],
                                   str(path))
                wall, rss, problem = refusal(cmd, env, timeout=max(10.0, args.budget * 5))
                shown = f"{path.name:<28} {command[0]:<9} {wall:6.2f} s {rss:7.1f} MiB"
                print(shown + (f"  FAIL: {problem}" if problem else ""))
                if problem:
                    failures.append(f"{path.name} {command[0]}: {problem}")
                if wall > args.budget:
                    failures.append(f"{path.name} {command[0]}: {wall:.2f} s > {args.budget} s")
                if rss > args.memory:
                    failures.append(f"{path.name} {command[0]}: {rss:.0f} MiB > {args.memory}")
        failures += other_inputs(tmp, env, args)
        print(f"large files, validate, {args.runs} runs each (median CPU):")
        for name, (half, full) in big_files(tmp).items():
            small = time_runs(skyc_command("validate", str(half)), env, args.runs)
            large = time_runs(skyc_command("validate", str(full)), env, args.runs)
            ratio = large.cpu / small.cpu
            print(f"  {name}: half {small.cpu:.3f} s, full {large.cpu:.3f} s "
                  f"(wall {large.wall:.3f} s), x{ratio:.2f}")
            if ratio > args.ratio:
                failures.append(f"{name}: doubling took x{ratio:.2f} the CPU (> {args.ratio})")
    for failure in failures:
        print(f"FAIL: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
