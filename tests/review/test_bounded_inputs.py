"""Every file skyc reads besides task files goes through the task files' bounded reader:
the config, policy files (``--policy``, the config's ``policy:``, ``skyc-policy.yaml``
beside the task), ``--env-file``, ``--catalog`` files, Kubernetes node caches and
kubeconfigs, and saved plans. ``/dev/zero``, a symlink to it, a FIFO, a binary file,
deep nesting and an oversize file each get a clear error naming the file, a non-zero
exit and no traceback. Each CLI run is a subprocess with a timeout, so a hang fails its
test; the time and memory ceilings are asserted by ``benchmarks/bench_hostile.py``."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skyc.errors import CatalogError, ConfigError
from skyc.task.documents import check_json, parse_yaml
from skyc.task.inputs import CONFIG, PLAN
from tests.support.hostile_inputs import CSV_HEADER, TASK, all_cases, scenario

ROOT = Path(__file__).resolve().parents[2]
CASES = all_cases()


def _skyc(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    full.update(env, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "skyc", *args], capture_output=True,
                          text=True, env=full, cwd=cwd, timeout=20, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(("kind", "case"), CASES, ids=[f"{k}-{c}" for k, c in CASES])
def test_a_hostile_input_is_a_clean_error_naming_the_file(
        tmp_path: Path, kind: str, case: str) -> None:
    found = scenario(tmp_path, kind, case)
    assert found is not None
    r = _skyc(found.args, found.env, tmp_path)
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    error = next((line for line in r.stderr.splitlines() if line.startswith("error:")), "")
    assert f"{found.shown}" in error and found.expect in error, r.stderr[-2000:]


def test_every_kind_meets_every_case_that_applies() -> None:
    kinds = {k for k, _ in CASES}
    assert len(kinds) == 9
    for kind in kinds:
        cases = {c for k, c in CASES if k == kind}
        assert {"symlink", "fifo", "binary", "oversize"} <= cases, kind


def test_an_env_file_is_key_value_lines_named_by_its_flag(tmp_path: Path) -> None:
    from skyc.task.envfile import read_env_file

    env = tmp_path / ".env"
    env.write_text("# comment\n\nexport A=1\nB=\"two words\"\nC='3'\nD=\n")
    assert read_env_file(env) == {"A": "1", "B": "two words", "C": "3", "D": ""}
    env.write_text("not a pair\n")
    with pytest.raises(ConfigError, match=rf"--env-file {tmp_path}/\.env:1: expected KEY=VALUE"):
        read_env_file(env)


# -- kubeconfigs: reported as the kubeconfig's problems, never quoted ------------------


@pytest.mark.timeout(20)
@pytest.mark.parametrize("case", ["fifo", "symlink", "nested"])
def test_a_hostile_kubeconfig_is_reported_not_read(tmp_path: Path, case: str) -> None:
    from skyc.compiler.kubernetes.credentials import credentials
    from skyc.compiler.kubernetes.discovery import check_kubeconfig

    path = tmp_path / "kubeconfig"
    if case == "fifo":
        os.mkfifo(path)
    elif case == "symlink":
        path.symlink_to("/dev/zero")
    else:
        path.write_text("clusters: " + "[" * 5000 + "]" * 5000 + "\n")
    found = credentials(env={"KUBECONFIG": str(path)}, home=tmp_path)
    assert not found.ok and found.reason.startswith(f"{path}: "), found.reason
    assert ("nested deeper than 100 levels" if case == "nested"
            else "not a regular file") in found.reason
    with pytest.raises(CatalogError, match=r"not a regular file|nested deeper"):
        check_kubeconfig(str(path))


def test_a_kubeconfig_that_does_not_parse_is_not_quoted(tmp_path: Path) -> None:
    from skyc.compiler.kubernetes.credentials import credentials

    path = tmp_path / "kubeconfig"
    path.write_text("users:\n- name: x\n  user: {token: sekrit-value\n")
    found = credentials(env={"KUBECONFIG": str(path)}, home=tmp_path)
    assert found.reason.startswith(f"{path}: not valid YAML (line ")
    assert "sekrit" not in found.reason


# -- catalogs ----------------------------------------------------------------------------


def test_a_raw_catalog_holds_at_most_its_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    from skyc.catalog import csvformat

    monkeypatch.setattr(csvformat, "MAX_CATALOG_ROWS", 2)
    row = "m6i.large,,,2,8,0.1,0.05,us-east-1\n"
    header = CSV_HEADER.decode()
    assert len(csvformat.parse_vms_text("aws", header + row * 2, "v.csv")["types"]) == 1
    with pytest.raises(CatalogError, match=r"v\.csv: holds more than 2 rows"):
        csvformat.parse_vms_text("aws", header + row * 3, "v.csv")


def test_a_csv_field_past_the_csv_limit_is_a_catalog_error() -> None:
    from skyc.catalog.csvformat import parse_vms_text

    header = CSV_HEADER.decode()
    with pytest.raises(CatalogError, match=r"v\.csv:2: not CSV: field larger than"):
        parse_vms_text("aws", header + '"' + "x" * 200_000 + '",,,1,1,1,1,r\n', "v.csv")


@pytest.mark.timeout(20)
def test_a_catalog_cache_that_is_a_fifo_is_a_miss(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from skyc.catalog import store

    monkeypatch.setenv("SKYC_HOME", str(tmp_path))
    source = store.BUNDLED_DIR / "aws.json.gz"
    info = source.stat()
    cache, _ = store._cache_path(source, info.st_size, info.st_mtime_ns)
    cache.parent.mkdir(parents=True)
    os.mkfifo(cache)
    assert store.read_compact(source)["cloud"] == "aws"


@pytest.mark.timeout(20)
def test_catalog_update_from_a_file_url_reads_as_every_catalog_file(tmp_path: Path) -> None:
    from skyc.catalog.store import update_catalog

    (tmp_path / "src" / "aws").mkdir(parents=True)
    os.mkfifo(tmp_path / "src" / "aws" / "vms.csv")
    for source in (f"file://{tmp_path / 'src'}", str(tmp_path / "src")):
        with pytest.raises(CatalogError, match=r"aws/vms\.csv: is a FIFO"):
            update_catalog(source, tmp_path / "out")


def test_a_truncated_compact_catalog_is_named(tmp_path: Path) -> None:
    from skyc.catalog.store import read_compact

    path = tmp_path / "aws.json.gz"
    path.write_bytes(gzip.compress(b'{"cloud": "aws", "types": []}')[:-12])
    with pytest.raises(CatalogError, match=r"aws\.json\.gz: not a whole gzip file"):
        read_compact(path)


# -- JSON and YAML measures --------------------------------------------------------------


def test_json_strings_are_not_counted_or_nested() -> None:
    inner = json.dumps({"k": [[["x"]]] * 10, "s": "[" * 500 + ",:" * 300_000})
    check_json(json.dumps({"files": {"main.tf.json": inner}}).encode(), "p", PLAN)
    escaped = b'{"a": "\\\\", "b": "\\"[[[[", "c": [1, 2]}'
    check_json(escaped, "p", PLAN)
    with pytest.raises(ConfigError, match=r"p: holds more than 500,000 values; a plan file"):
        check_json(b"[" + b"0," * 500_000 + b"0]", "p", PLAN)
    with pytest.raises(ConfigError, match=r"p: invalid JSON: nested deeper than 100 levels"):
        check_json(b'{"a": "]]]]", "b": ' + b"[" * 101 + b"]" * 101 + b"}", "p", PLAN)
    check_json(b"[" * 100 + b"]" * 100, "p", PLAN)


def test_yaml_bounds_name_the_kind_of_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"c\.yaml:2: holds more than 500,000 values; "
                                          r"a config file holds at most"):
        parse_yaml("a: 1\nb: [" + "1," * 500_001 + "1]\n", "c.yaml", CONFIG)
    with pytest.raises(ConfigError, match=r"c\.yaml:\d+: x: expands to more than 500,000"):
        parse_yaml("a: &a [" + ", ".join(["1"] * 1000) + "]\nx:\n" + "".join(
            f"  k{i}: *a\n" for i in range(600)), "c.yaml", CONFIG)
    with pytest.raises(ConfigError, match=r"c\.yaml:1: invalid YAML: a YAML alias refers"):
        parse_yaml("a: &a [*a]\n", "c.yaml", CONFIG)
    assert parse_yaml("a: &a [1, 2]\nb: *a\n", "c.yaml", CONFIG) == {"a": [1, 2], "b": [1, 2]}


# -- saved plans: digests checked before anything in them is used ----------------------


@pytest.fixture()
def saved(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A plan file of a local task (no engine diff: nothing to apply, all to check)."""
    (tmp_path / "task.yaml").write_text(TASK)
    env = {"SKYC_HOME": str(tmp_path / "home"), "HOME": str(tmp_path), "NO_COLOR": "1"}
    out = tmp_path / "saved.plan"
    r = _skyc(["plan", str(tmp_path / "task.yaml"), "--no-diff", "-o", str(out)], env, tmp_path)
    assert r.returncode == 0, r.stderr
    return out, env


def _edit(path: Path, change: str) -> None:
    doc = json.loads(path.read_text())
    st = doc["stacks"][0]
    if change == "files":
        st["files"]["main.tf.json"] = st["files"]["main.tf.json"].replace("local", "l0cal")
    elif change == "digest":
        st["digest"] = "sha256:nope"
    elif change == "placements":
        doc["placements"] = []
    elif change == "engine_plan":
        st["engine_plan"] = "not base64!"
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize(("change", "said"), [
    ("files", "stack t's files do not match its digest"),
    ("digest", "stacks.t.digest is not a digest"),
    ("placements", "1 task(s) but 0 placement list(s)"),
    ("engine_plan", "stacks.t.engine_plan is not base64"),
])
def test_a_plan_file_changed_by_hand_is_refused_before_use(
        saved: tuple[Path, dict[str, str]], change: str, said: str) -> None:
    path, env = saved
    _edit(path, change)
    r = _skyc(["apply", str(path)], env, path.parent)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert f"error: {path}: {said}" in r.stderr and "nothing in it was used" in r.stderr, \
        r.stderr


def test_a_task_file_replaced_after_the_plan_is_not_loaded(
        saved: tuple[Path, dict[str, str]]) -> None:
    path, env = saved
    task = path.parent / "task.yaml"
    task.unlink()
    os.mkfifo(task)  # loading it would be refused too; the digest is checked first
    r = _skyc(["apply", str(path)], env, path.parent)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    said = f"the plan is stale, nothing was applied: task file {task.resolve()} changed"
    assert said in r.stderr, r.stderr


@pytest.mark.timeout(20)
def test_a_fifo_is_not_taken_for_a_plan_file(tmp_path: Path) -> None:
    from skyc.review.planfile import looks_like_plan_file

    os.mkfifo(tmp_path / "plan")
    assert looks_like_plan_file(tmp_path / "plan") is False
