"""Command-line overrides of a task's resources, as ``sky launch``/``sky exec`` take them.

``--gpus``, ``--cpus``, ``--memory``, ``--instance-type``, ``--disk-size``,
``--use-spot``/``--no-use-spot`` replace the task's value of the same field, in
its ``resources`` and in every ``any_of``/``ordered`` entry that sets it;
``--num-nodes`` replaces ``num_nodes``. They are applied to the document before
it is validated, so a bad value is reported like a bad field of the file.
``--env-file`` reads ``KEY=VALUE`` lines (``#`` comments, blank lines and an
``export`` prefix allowed, values optionally quoted); ``--env`` wins over it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

RESOURCE_FLAGS = {"accelerators": "--gpus", "cpus": "--cpus", "memory": "--memory",
                  "instance_type": "--instance-type", "disk_size": "--disk-size",
                  "use_spot": "--use-spot"}


def resource_overrides(*, gpus: str | None = None, cpus: str | None = None,
                       memory: str | None = None, instance_type: str | None = None,
                       disk_size: int | None = None, use_spot: bool | None = None,
                       num_nodes: int | None = None) -> dict[str, Any]:
    """The overrides given (None: not given), keyed by the task field they replace."""
    given: dict[str, Any] = {"accelerators": gpus, "cpus": cpus, "memory": memory,
                             "instance_type": instance_type, "disk_size": disk_size,
                             "use_spot": use_spot}
    out: dict[str, Any] = {"resources": {k: v for k, v in given.items() if v is not None}}
    if num_nodes is not None:
        out["num_nodes"] = num_nodes
    if not out["resources"]:
        del out["resources"]
    return out


def apply_to_document(doc: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``doc`` with ``overrides`` (from :func:`resource_overrides`) applied."""
    if not overrides:
        return doc
    doc = dict(doc)
    if "num_nodes" in overrides:
        doc["num_nodes"] = overrides["num_nodes"]
    fields = overrides.get("resources") or {}
    if fields:
        res = doc.get("resources")
        res = copy.deepcopy(res) if isinstance(res, dict) else {}
        res.update(fields)
        for kind in ("any_of", "ordered"):
            entries = res.get(kind)
            if isinstance(entries, list):
                res[kind] = [{**e, **{k: v for k, v in fields.items() if k in e}}
                             if isinstance(e, dict) else e for e in entries]
        doc["resources"] = res
    return doc
