"""Every golden stack, and AWS's shared network stack, is valid Terraform, checked by
``terraform validate`` with the real providers (covers what moto cannot run: EFA
interfaces, placement groups, S3 backend)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from skyc.compiler.aws.network import network_stack
from skyc.settings.config import SkycConfig
from skyc.stacks import STACK_FILE, emit
from skyc.stacks.terraform import find_binary
from tests.compiler.golden import case_id, cases
from tests.support.terraform import (
    TERRAFORM_ENV,
    plugin_dir,
    requires_aws_provider,
    requires_terraform,
)

pytestmark = [pytest.mark.slow, pytest.mark.aws, requires_terraform, requires_aws_provider]


def terraform_cases() -> list[Path]:
    """The cases whose target's stacks terraform takes (a main.tf.json is expected)."""
    return [case for case in cases() if (case / STACK_FILE).exists()]


def _tf(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([find_binary(), *args], cwd=workdir, capture_output=True, text=True,
                          timeout=300, env={"PATH": "/usr/bin:/bin:/usr/local/bin",
                                            "HOME": str(workdir), "CHECKPOINT_DISABLE": "1",
                                            **TERRAFORM_ENV})


def test_golden_stacks_validate(tmp_path: Path) -> None:
    # One root module calling every golden stack as a child module: a single init and
    # a single validate (loading the provider schema once).
    root = tmp_path / "validate"
    root.mkdir()
    modules = {}
    for case in terraform_cases():
        name = case_id(case).replace("/", "__")
        (root / name).mkdir()
        shutil.copy(case / STACK_FILE, root / name / STACK_FILE)
        doc = json.loads((case / STACK_FILE).read_text())
        modules[name] = {"source": f"./{name}", **{
            var: "ssh-ed25519 AAAA test" for var in doc.get("variable", {})}}
    # The shared network the AWS clusters' stacks take their inputs from.
    network = network_stack("us-east-1", ["use1-az1", None], "alice@workstation",
                            SkycConfig())
    (root / "network").mkdir()
    (root / "network" / STACK_FILE).write_text(emit(network, "terraform")[STACK_FILE])
    modules["network"] = {"source": "./network"}
    (root / STACK_FILE).write_text(json.dumps({"module": modules}))
    init = _tf(root, "init", "-input=false", "-backend=false", f"-plugin-dir={plugin_dir()}")
    assert init.returncode == 0, init.stdout + init.stderr
    result = _tf(root, "validate", "-json", "-no-color")
    report = json.loads(result.stdout)
    errors = [d for d in report["diagnostics"] if d["severity"] == "error"]
    assert report["valid"] and not errors, errors
    assert len(modules) == len(terraform_cases()) + 1 >= 8
