"""Property tests: any input gives either a valid task file or a SkycError, never
another exception; whatever loads, dumps to something that loads back equal."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from skyc.errors import SkycError, TaskSpecError
from skyc.task import Resources, TaskFile, expand_resources, load_tasks
from tests.task.fixtures import VALID

KEYS = [
    "name", "workdir", "num_nodes", "resources", "envs", "secrets", "file_mounts", "setup",
    "run", "config", "volumes", "inputs", "outputs", "service", "infra", "cloud", "region",
    "zone", "accelerators", "gpus", "cpus", "memory", "instance_type", "use_spot",
    "disk_size", "disk_tier", "network_tier", "ports", "labels", "image_id",
    "accelerator_args", "any_of", "ordered", "job_recovery", "autostop", "priority",
    "strategy", "idle_minutes", "down", "source", "store", "mode", "persistent", "url", "ref",
    "execution", "primary_tasks", "termination_delay", "/data", "~/x", "A100:8", "KEY",
]
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 70000),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12), st.dates(),
    st.sampled_from(["A100:8", "aws/us-east-1", "k8s/ctx", "4+", "80GB+:1", "1h", "copy",
                     "s3://b/$X", "${X}", "9000-9010", "tpu-v4-8", "*/r", "local", "best"]),
)
KEY = st.one_of(st.sampled_from(KEYS), st.text(max_size=8), st.integers(0, 3))
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(KEY, inner, max_size=5)
    ),
    max_leaves=20,
)
SETTINGS = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def _load_text(text: str) -> TaskFile | None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "task.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            loaded = load_tasks(path)
        except TaskSpecError as exc:
            assert exc.problems and all(p.file == str(path) for p in exc.problems)
            return None
        except SkycError:
            return None
        again = Path(tmp) / "again.yaml"
        again.write_text(yaml.safe_dump_all(loaded.dump(), sort_keys=False))
        reloaded = load_tasks(again)
        # A dump writes secret values as null (they are given again with --secret).
        assert [t.dump() for t in reloaded.tasks] == [t.dump() for t in loaded.tasks]
        assert reloaded.header == loaded.header
        return loaded


def _dump(docs: list[Any]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False)


@SETTINGS
@given(st.lists(st.dictionaries(KEY, VALUES, max_size=6), min_size=1, max_size=3))
def test_random_documents(docs: list[dict[Any, Any]]) -> None:
    _load_text(_dump(docs))


@SETTINGS
@given(st.text(alphabet=st.sampled_from(list("ab:- \n[]{}'\"#&*!|>%@`,?0\t")), max_size=60))
def test_random_text(text: str) -> None:
    _load_text(text)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _mutate(doc: Any, path: tuple[Any, ...], how: str, new: Any, key: Any) -> Any:
    if not path:
        return new if how == "replace" else doc
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if how == "replace":
        parent[last] = new
    elif how == "delete":
        del parent[last]
    elif how == "rename" and isinstance(parent, dict):
        parent[key] = parent.pop(last)
    elif how == "wrap":
        parent[last] = [parent[last]]
    return doc


VALID_DOCS = [list(yaml.safe_load_all(p.read_text())) for p in VALID]


@SETTINGS
@given(
    st.sampled_from(range(len(VALID_DOCS))), st.data(),
    st.sampled_from(["replace", "delete", "rename", "wrap"]), VALUES, KEY,
)
def test_mutated_valid_tasks(which: int, data: st.DataObject, how: str, new: Any,
                             key: Any) -> None:
    docs = yaml.safe_load(yaml.safe_dump(VALID_DOCS[which]))  # deep copy
    path = data.draw(st.sampled_from(_paths(docs)[1:]))
    _load_text(_dump(_mutate(docs, path, how, new, key)))


RESOURCE_KEYS = [k for k in Resources.model_fields if k not in ("any_of", "ordered")]
RESOURCE_VALUES = st.one_of(
    SCALARS,
    st.from_regex(r"\A[A-Za-z0-9]{1,6}(:[0-9.]{1,4})?(\+)?\Z"),
    st.from_regex(r"\A[0-9.eE+-]{1,8}\Z"),
    st.lists(st.sampled_from(["A100:8", "L4", "80GB+:2", 8080, "1-2", "x"]), max_size=3),
    st.dictionaries(st.sampled_from(["A100", "H100:80GB+", "L4:2", "us-east-1", "k"]),
                    st.one_of(st.none(), st.integers(-1, 9), st.text(max_size=3)), max_size=3),
)
RESOURCE_DICT = st.dictionaries(st.sampled_from(RESOURCE_KEYS), RESOURCE_VALUES, max_size=5)


@settings(max_examples=300, deadline=None)
@given(RESOURCE_DICT, st.lists(RESOURCE_DICT, max_size=3), st.sampled_from(["any_of", "ordered"]))
def test_resources_round_trip(base: dict[str, Any], entries: list[dict[str, Any]],
                              kind: str) -> None:
    """Any resources that validate dump to data that validates to equal resources,
    and expand without error."""
    data: dict[str, Any] = {**base, kind: entries} if entries else base
    try:
        res = Resources.model_validate(data)
    except ValidationError:
        return
    dumped = yaml.safe_load(yaml.safe_dump(res.model_dump(mode="json", exclude_none=True)))
    assert Resources.model_validate(dumped) == res
    cands = expand_resources(res)
    assert [c.index for c in cands] == list(range(len(cands)))
    assert [c.preference for c in cands] == sorted(c.preference for c in cands)
