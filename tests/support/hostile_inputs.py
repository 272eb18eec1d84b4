"""Hostile inputs of every kind of file skyc reads besides task files, built at run time
(nothing large is kept in git): the config, a policy (``--policy``, the config's
``policy:``, ``skyc-policy.yaml`` beside the task), ``--env-file``, ``--catalog`` files
(a raw ``vms.csv``, a compact ``<cloud>.json.gz``), a Kubernetes node cache and a saved
plan, each as ``/dev/zero``, a symlink to it, a FIFO, a binary file, deep nesting, an
oversize file (and, where they apply, a gzip bomb, too many values or rows).

``tests/review/test_bounded_inputs.py`` runs each through the CLI and checks the error;
``benchmarks/bench_hostile.py`` holds each to its time and memory ceilings.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

MIB = 1 << 20
DEPTH = 5_000  # brackets deep: far past the cap (100), and past Python's recursion limit

TASK = "name: t\nresources:\n  infra: local\nrun: echo hi\n"
AWS_TASK = "name: t\nresources:\n  infra: aws\n  cpus: 2\nrun: echo hi\n"
K8S_TASK = "name: t\nresources:\n  accelerators: A100:8\nrun: echo hi\n"
KUBECONFIG = ("current-context: lab\ncontexts:\n- name: lab\n  context: {cluster: c}\n"
              "clusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:9'}\n")
K8S_CONFIG = ("kubernetes:\n  contexts:\n    lab:\n      pools:\n        - {accelerator: A100, "
              "count_per_node: 8, nodes: 2, price_per_gpu_hour: 9}\n")
CSV_HEADER = (b"InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,"
              b"SpotPrice,Region\n")
META = b'{"clouds": ["aws"], "date": "2026-01-01", "source": "hostile"}\n'
PLAN_HEAD = b'{"format": "skyc-plan", "format_version": "1.0", '

EXPECT = {
    "dev-zero": "is a character device, not a regular file",
    "symlink": "is a character device, not a regular file",
    "fifo": "is a FIFO (named pipe), not a regular file",
    "binary": "is not UTF-8 text (byte 0xff at offset",
    "nested": "nested deeper than 100 levels",
    "oversize": "is larger than",
    "bomb": "inflates to more than 32 MiB",
    "values": "holds more than",
    "rows": "rows; a catalog file holds at most",
}
# The cap of each format's files (bytes), as skyc.task.inputs sets them.
CAPS = {"yaml": 8 * MIB, "env": 8 * MIB, "csv": 32 * MIB, "gz": 32 * MIB, "json": 32 * MIB,
        "plan": 32 * MIB}
VALUES = {"json": 1_000_000, "plan": 500_000}  # values a node cache, a plan may hold


def _nest(depth: int = DEPTH) -> bytes:
    return b"[" * depth + b"]" * depth


def _binary(fmt: str) -> bytes | None:
    return {"yaml": b"name: \xff\xfe\n", "env": b"A=\xff\xfe\n",
            "csv": CSV_HEADER + b"m6i.large,\xff\xfe,,2,8,1,1,us-east-1\n",
            "json": b'{"version": 1, "nodes": "\xff\xfe"}', "plan": PLAN_HEAD + b'"x": "\xff\xfe"}',
            "gz": gzip.compress(b'{"types": "\xff\xfe"}')}.get(fmt)


def _nested(fmt: str) -> bytes | None:
    return {"yaml": b"a: " + _nest() + b"\n", "json": b'{"a": ' + _nest() + b"}",
            "plan": PLAN_HEAD + b'"x": ' + _nest() + b"}",
            "gz": gzip.compress(b'{"a": ' + _nest() + b"}")}.get(fmt)


def _values(fmt: str) -> bytes | None:
    if fmt not in VALUES:
        return None
    many = b"0," * VALUES[fmt] + b"0"
    return (PLAN_HEAD + b'"x": [' + many + b"]}") if fmt == "plan" else b"[" + many + b"]"


def _rows(fmt: str) -> bytes | None:
    from skyc.task.inputs import MAX_CATALOG_ROWS

    return CSV_HEADER + b"m6i.large,,,2,8,1,1,r\n" * (MAX_CATALOG_ROWS + 1) if fmt == "csv" \
        else None


def _write(path: Path, fmt: str, case: str) -> bool:
    """Make ``path`` the hostile ``case`` of a ``fmt`` file; False when it does not apply."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if case == "symlink":
        path.symlink_to("/dev/zero")
    elif case == "fifo":
        os.mkfifo(path)
    elif case == "oversize":
        with path.open("wb") as out:  # sparse: past the cap without writing it
            out.write(PLAN_HEAD if fmt == "plan" else b"")
            out.truncate(CAPS[fmt] + 1)
    elif case == "bomb" and fmt == "gz":
        with gzip.open(path, "wb", compresslevel=9) as out:  # a MiB at a time: small RSS
            for _ in range(CAPS[fmt] // MIB + 1):
                out.write(b" " * MIB)
    else:
        make: dict[str, Callable[[str], bytes | None]] = {
            "binary": _binary, "nested": _nested, "values": _values, "rows": _rows}
        data = make[case](fmt) if case in make else None
        if data is None:
            return False
        path.write_bytes(data)
    return True


class Scenario(NamedTuple):
    """One hostile input and the skyc command that reads it."""

    kind: str
    case: str
    args: list[str]   # skyc's arguments
    env: dict[str, str]
    shown: str        # how the error names the file
    expect: str       # what the error says about it


class _Kind(NamedTuple):
    fmt: str
    place: Callable[[Path, Path], Path]           # (root, home) -> where the file goes
    args: Callable[[Path, Path], list[str]]       # (root, file) -> skyc's arguments
    shown: Callable[[Path], str]                  # file -> how the error names it
    by_path: bool                                 # given by path: /dev/zero itself may be


def _plan(task: str) -> Callable[[Path, Path], list[str]]:
    return lambda root, _f: ["plan", str(root / task), "--no-diff"]


def _cache(root: Path, home: Path) -> Path:
    from skyc.compiler.kubernetes.discovery import cache_path

    return cache_path("lab", home)


KINDS: dict[str, _Kind] = {
    "config": _Kind("yaml", lambda r, h: h / "config.yaml", _plan("task.yaml"), str, False),
    "policy-flag": _Kind("yaml", lambda r, h: r / "p.yaml",
                         lambda r, f: [*_plan("task.yaml")(r, f), "--policy", str(f)],
                         lambda f: f"policy {f}", True),
    "policy-config": _Kind("yaml", lambda r, h: r / "p.yaml", _plan("task.yaml"),
                           lambda f: f"policy {f}", True),
    "policy-beside": _Kind("yaml", lambda r, h: r / "skyc-policy.yaml", _plan("task.yaml"),
                           lambda f: f"policy {f}", False),
    "env-file": _Kind("env", lambda r, h: r / "vars.env",
                      lambda r, f: [*_plan("task.yaml")(r, f), "--env-file", str(f)],
                      lambda f: f"--env-file {f}", True),
    "catalog-csv": _Kind("csv", lambda r, h: r / "raw" / "aws" / "vms.csv",
                         lambda r, f: [*_plan("aws.yaml")(r, f), "--catalog", str(r / "raw")],
                         str, False),
    "catalog-gz": _Kind("gz", lambda r, h: r / "compact" / "aws.json.gz",
                        lambda r, f: [*_plan("aws.yaml")(r, f), "--catalog",
                                      str(r / "compact")], str, False),
    "node-cache": _Kind("json", _cache,
                        lambda r, f: [*_plan("k8s.yaml")(r, f), "--infra", "k8s/lab"],
                        str, False),
    "plan": _Kind("plan", lambda r, h: r / "saved.plan", lambda r, f: ["apply", "-y", str(f)],
                  str, True),
}
CASES = ("dev-zero", "symlink", "fifo", "binary", "nested", "oversize", "bomb", "values",
         "rows")


def _prepare(root: Path, home: Path, kind: str) -> None:
    """The honest files around the hostile one: tasks, a kubeconfig, a catalog's meta."""
    home.mkdir(parents=True, exist_ok=True)
    for name, text in (("task.yaml", TASK), ("aws.yaml", AWS_TASK), ("k8s.yaml", K8S_TASK)):
        (root / name).write_text(text)
    if kind == "node-cache":
        (root / ".kube").mkdir(exist_ok=True)
        (root / ".kube" / "config").write_text(KUBECONFIG)
        (home / "config.yaml").write_text(K8S_CONFIG)
    if kind == "catalog-gz":
        (root / "compact").mkdir(exist_ok=True)
        (root / "compact" / "meta.json").write_bytes(META)


def scenario(root: Path, kind: str, case: str) -> Scenario | None:
    """Build ``kind``'s hostile ``case`` under ``root`` (None: the case does not apply)."""
    spec = KINDS[kind]
    home = root / "home"
    _prepare(root, home, kind)
    target = spec.place(root, home)
    if case == "dev-zero":
        if not spec.by_path:
            return None  # the symlink case puts /dev/zero where this file is looked for
        target = Path("/dev/zero")
    elif not _write(target, spec.fmt, case):
        return None
    if kind == "policy-config":
        (home / "config.yaml").write_text(f"policy: {target}\n")
    env = {"SKYC_HOME": str(home), "HOME": str(root), "NO_COLOR": "1"}
    return Scenario(kind, case, spec.args(root, target), env, spec.shown(target),
                    EXPECT[case])


def all_cases() -> list[tuple[str, str]]:
    """Every (kind, case) that applies, without building anything."""
    return [(kind, case) for kind, spec in KINDS.items() for case in CASES
            if (spec.by_path if case == "dev-zero" else _applies(spec.fmt, case))]


def _applies(fmt: str, case: str) -> bool:
    if case == "bomb":
        return fmt == "gz"
    if case == "values":
        return fmt in VALUES
    if case == "rows":
        return fmt == "csv"
    if case in ("binary", "nested"):
        return (_binary if case == "binary" else _nested)(fmt) is not None
    return True
