"""load_tasks, the flag parsers, secrets handling and expand_resources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skyc.errors import ConfigError, TaskSpecError
from skyc.task import (
    AcceleratorRequest,
    InfraSpec,
    Resources,
    Task,
    expand_resources,
    is_bucket_uri,
    load_tasks,
    parse_env_flags,
    parse_secret_flags,
)

SECRET = "s3cr3t-value-do-not-print"


def write(tmp_path: Path, text: str, name: str = "task.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_missing_file_is_a_clean_error(tmp_path: Path) -> None:
    with pytest.raises(TaskSpecError) as info:
        load_tasks(tmp_path / "nope.yaml")
    assert str(info.value) == f"{tmp_path / 'nope.yaml'}: file not found"
    assert info.value.problems[0].path == ""


def test_directory_and_binary_files_are_clean_errors(tmp_path: Path) -> None:
    with pytest.raises(TaskSpecError, match="is a directory"):
        load_tasks(tmp_path)
    binary = tmp_path / "b.yaml"
    binary.write_bytes(b"name: \xff\xfe")
    with pytest.raises(TaskSpecError, match="not UTF-8"):
        load_tasks(binary)


def test_every_problem_is_reported_with_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "num_nodes: -1\nresources:\n  cpus: x\nrunn: a\n")
    with pytest.raises(TaskSpecError) as info:
        load_tasks(path)
    got = [(p.path, p.line) for p in info.value.problems]
    assert got == [("num_nodes", 1), ("resources.cpus", 3), ("runn", 4)]
    assert info.value.problems[2].suggestion == "run"


def test_secret_values_never_shown(tmp_path: Path) -> None:
    path = write(tmp_path, "secrets:\n  TOKEN: null\nenvs:\n  A: b\nrun: x\n")
    task = load_tasks(path, secrets={"TOKEN": SECRET}).tasks[0]
    assert task.secret_values() == {"TOKEN": SECRET}
    for text in (repr(task), str(task), json.dumps(task.dump()),
                 task.model_dump_json(), repr(task.secrets)):
        assert SECRET not in text
    assert task.dump()["secrets"] == {"TOKEN": None}
    assert task.env_values() == {"A": "b"}


def test_secret_value_in_file_not_echoed_in_errors(tmp_path: Path) -> None:
    path = write(tmp_path, f"secrets:\n  TOKEN: [{SECRET}]\n  bad-name: {SECRET}\n")
    with pytest.raises(TaskSpecError) as info:
        load_tasks(path)
    assert len(info.value.problems) == 2
    assert SECRET not in str(info.value)


def test_secret_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKEN", SECRET)
    path = write(tmp_path, "secrets:\n  TOKEN: null\n")
    task = load_tasks(path, secrets=parse_secret_flags(["TOKEN"]), require_values=True).tasks[0]
    assert task.secret_values() == {"TOKEN": SECRET}


def test_null_values_warn_or_fail(tmp_path: Path) -> None:
    path = write(tmp_path, "envs:\n  NEED:\nsecrets:\n  KEY: null\n")
    loaded = load_tasks(path)
    assert [(w.path, w.severity) for w in loaded.warnings] == [
        ("envs.NEED", "warning"), ("secrets.KEY", "warning")
    ]
    assert "--env NEED=VALUE" in loaded.warnings[0].message
    assert "--secret KEY" in loaded.warnings[1].message
    with pytest.raises(TaskSpecError) as info:
        load_tasks(path, require_values=True)
    assert [p.path for p in info.value.problems] == ["envs.NEED", "secrets.KEY"]
    ok = load_tasks(path, env={"NEED": "1"}, secrets={"KEY": "v"}, require_values=True)
    assert ok.tasks[0].envs == {"NEED": "1"}


def test_env_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FROM_ENV", "x")
    monkeypatch.delenv("NOT_SET", raising=False)
    assert parse_env_flags(["A=1", "B=x=y", "C=", "FROM_ENV"]) == {
        "A": "1", "B": "x=y", "C": "", "FROM_ENV": "x"
    }
    with pytest.raises(ConfigError, match="NOT_SET is not set"):
        parse_env_flags(["NOT_SET"])
    with pytest.raises(ConfigError, match="invalid name"):
        parse_env_flags(["bad-name=1"])
    assert parse_secret_flags(["K=v", "J"]) == {"K": "v", "J": None}
    with pytest.raises(ConfigError):
        parse_secret_flags(["1x=2"])


def test_substitution_uses_overridden_envs(tmp_path: Path) -> None:
    path = write(tmp_path, "envs:\n  B: file\nfile_mounts:\n  /d: s3://$B/${B}\nrun: echo $B\n")
    task = load_tasks(path, env={"B": "flag"}).tasks[0]
    assert task.file_mounts == {"/d": "s3://flag/flag"}
    assert task.run == "echo $B"  # run is left for the shell on the nodes


def test_service_is_accepted_with_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path, "service:\n  replicas: 2\nrun: x\n")
    loaded = load_tasks(path)
    service = loaded.tasks[0].service
    assert service is not None and service.dump() == {"replicas": 2}
    assert loaded.warnings[0].path == "service"
    assert "skyc serve up" in loaded.warnings[0].message


def test_expand_preferences_and_overrides() -> None:
    res = Resources.model_validate({
        "accelerators": "A100:8", "disk_size": 100, "use_spot": True,
        "ordered": [
            {"infra": "aws/us-east-1", "accelerators": ["H100:8", "A100:8"]},
            {"infra": "gcp", "accelerators": {"L4:8": None, "T4:8": None}, "use_spot": False},
        ],
    })
    cands = expand_resources(res)
    assert [c.index for c in cands] == [0, 1, 2, 3]
    assert [c.preference for c in cands] == [0, 1, 2, 2]
    assert [c.accelerator.name for c in cands if c.accelerator] == ["H100", "A100", "L4", "T4"]
    assert [c.use_spot for c in cands] == [True, True, False, False]
    assert {c.disk_size for c in cands} == {100}
    assert cands[0].infra == InfraSpec(cloud="aws", region="us-east-1")
    assert cands[2].infra == InfraSpec(cloud="gcp")


def test_expand_defaults() -> None:
    (cand,) = Task.model_validate({"run": "x"}).candidates()
    assert cand.disk_size == 256 and cand.use_spot is False and cand.accelerator is None
    assert cand.infra == InfraSpec() and cand.ports == ()


def test_legacy_cloud_is_infra() -> None:
    res = Resources.model_validate({"cloud": "AWS", "region": "us-east-1"})
    assert res.infra == InfraSpec(cloud="aws", region="us-east-1")
    assert res == Resources.model_validate({"infra": "aws/us-east-1"})


@pytest.mark.parametrize(("text", "want"), [
    ("A100:8", AcceleratorRequest(name="A100", count=8)),
    ("a100", AcceleratorRequest(name="a100", count=1)),
    ("A100:0.25", AcceleratorRequest(name="A100", count=0.25)),
    ("tpu-v5litepod-8", AcceleratorRequest(name="tpu-v5litepod-8", count=1)),
    ("A100-80GB:4", AcceleratorRequest(name="A100-80GB", count=4)),
    ("80GB+", AcceleratorRequest(name=None, count=1, min_memory_gib=80)),
    ("24gb+:2", AcceleratorRequest(name=None, count=2, min_memory_gib=24)),
    ("H100:80GB+:8", AcceleratorRequest(name="H100", count=8, min_memory_gib=80)),
])
def test_accelerator_forms(text: str, want: AcceleratorRequest) -> None:
    (cand,) = expand_resources(Resources.model_validate({"accelerators": text}))
    assert cand.accelerator == want


def test_mapping_and_string_forms_are_equal() -> None:
    a = Resources.model_validate({"accelerators": "A100:8"})
    b = Resources.model_validate({"accelerators": {"A100": 8}})
    c = Resources.model_validate({"gpus": ["A100:8"]})
    assert a == b == c


@pytest.mark.parametrize("text", [
    "config: " + "[" * 3000 + "]" * 3000,
    "run: &a [*a]\n",
    "resources: &r {any_of: [*r]}\n",
    "name: !!python/object:os.system x\n",
    "? [a]\n: b\n",
    "\t- x\n",
])
def test_hostile_yaml_gives_a_clean_error(tmp_path: Path, text: str) -> None:
    with pytest.raises(TaskSpecError) as info:
        load_tasks(write(tmp_path, text))
    assert str(info.value).startswith(str(tmp_path / "task.yaml"))


def test_dates_in_envs_become_text(tmp_path: Path) -> None:
    task = load_tasks(write(tmp_path, "envs:\n  DAY: 2024-01-31\n")).tasks[0]
    assert task.envs == {"DAY": "2024-01-31"}


def test_secret_flag_without_environment_value(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UNSET_SECRET", raising=False)
    path = write(tmp_path, "run: x\n")
    with pytest.raises(TaskSpecError, match="UNSET_SECRET is not set in this environment"):
        load_tasks(path, secrets={"UNSET_SECRET": None}, require_values=True)


@pytest.mark.parametrize(("source", "bucket"), [
    ("s3://b/k", True), ("gs://b", True), ("r2://b", True),
    ("https://acct.blob.core.windows.net/c/p", True), ("https://example.com/x", False),
    ("./data", False), ("~/x", False), ("/abs", False),
])
def test_bucket_uris(source: str, bucket: bool) -> None:
    assert is_bucket_uri(source) is bucket


def test_hello_example() -> None:
    root = Path(__file__).resolve().parents[2]
    (task,) = load_tasks(root / "examples" / "hello.yaml").tasks
    assert task.name == "hello" and task.num_nodes == 2
    (cand,) = task.candidates()
    assert cand.infra == InfraSpec(cloud="local")
    assert task.run is not None and "$SKYPILOT_NODE_RANK" in task.run
    assert "$SKYPILOT_NUM_NODES" in task.run
    assert isinstance(task.workdir, str) and (root / task.workdir / "message.txt").is_file()


def test_pipeline_outputs() -> None:
    root = Path(__file__).resolve().parents[2]
    loaded = load_tasks(root / "examples" / "pipeline.yaml")
    assert loaded.header is not None and loaded.header.name == "preprocess-train-eval"
    assert [t.name for t in loaded.tasks] == ["preprocess", "train", "eval"]
    assert [t.outputs_size_gb for t in loaded.tasks] == [200, 50, 0]


def test_tpu_nodes_are_refused_naming_the_field_and_the_way_out(tmp_path: Path) -> None:
    path = write(tmp_path, "resources:\n  accelerators: tpu-v2-8\n"
                 "  instance_type: n1-highmem-8\n  accelerator_args: {tpu_vm: false}\n")
    with pytest.raises(TaskSpecError) as info:
        load_tasks(path)
    problem = info.value.problems[0]
    assert problem.path == "resources.accelerator_args" and problem.line == 4
    assert "TPU VMs only: drop tpu_vm: false" in problem.message
    ok = write(tmp_path, "resources:\n  accelerators: tpu-v2-8\n"
               "  accelerator_args: {tpu_vm: true}\n", "vm.yaml")
    assert load_tasks(ok).tasks[0].resources.accelerator_args == {"tpu_vm": True}
