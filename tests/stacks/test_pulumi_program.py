"""The Pulumi programs of every AWS golden case, run under Pulumi's own mock runtime
(the real SDK classes; no CLI, plugin or cloud: none can be installed here).

Checks the recorded resources (types, required inputs, one instance per node, spot
and accelerator settings, unique URNs), that the same placement through both
emitters gives the same resources with the same arguments, and that a misspelt
argument in a program fails.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pulumi_aws", reason="the Pulumi SDKs (skyc[pulumi]) are not installed")

from skyc.compiler.aws.images import image_tag, select_image
from skyc.compiler.aws.lowering import uses_efa
from skyc.errors import EngineError
from skyc.model.owner import owner_hash
from skyc.stacks import Block, Ref, Resource, Stack, Var, emit, to_terraform
from skyc.stacks.pulumi_preview import RecordedResource, run_program
from skyc.stacks.terraform_json import address
from tests.compiler.golden import OWNER, case_id, cases, compile_case, load

AWS_CASES = [c for c in cases() if c.parent.name == "aws"]
KEY = "ssh-ed25519 AAAA test"
# The inputs a cluster's stack is given: its key, and its shared network's ids.
INPUTS = {"ssh_public_key": KEY, "vpc_id": "vpc-0abc", "subnet_id": "subnet-0abc"}


def _run(stack: Stack, source: str | None = None) -> dict[str, RecordedResource]:
    program = source if source is not None else emit(stack, "pulumi")["__main__.py"]
    given = {k: v for k, v in INPUTS.items() if k in stack.variables}
    recorded = run_program(program, stack=stack.name, config=given)
    return {r.name: r for r in recorded}


@pytest.mark.parametrize("case", AWS_CASES, ids=case_id)
def test_program_under_the_mock_runtime(case: Path, tmp_path: Path) -> None:
    stack = compile_case(case, tmp_path)
    _, placement, candidate, _ = load(case)
    recorded = _run(stack)
    resources = {r.key for r in stack.resources}
    assert set(recorded) == resources | {"aws"}             # every resource, plus the provider
    assert recorded["aws"].type == "pulumi:providers:aws"
    assert recorded["aws"].inputs["region"] == placement.region
    nodes = sorted(k for k, r in recorded.items() if r.type == "aws:ec2/instance:Instance")
    assert nodes == [f"node_{i}" for i in range(placement.num_nodes)]
    image = select_image(placement, candidate, efa=uses_efa(placement, candidate))
    for key in nodes:
        inputs = recorded[key].inputs
        if image.resolved_at_launch:  # launched from a template holding image and volume
            assert "ami" not in inputs and "rootBlockDevice" not in inputs
            template = recorded["launch_template"].inputs
            assert template["imageId"] == image.ref
            assert inputs["launchTemplate"]["version"] == "$Default"
            volume = template["blockDeviceMappings"][0]["ebs"]
        else:
            assert inputs["ami"] == image.ref and image.ref.startswith("ami-")
            volume = inputs["rootBlockDevice"]
        assert inputs["instanceType"] == placement.instance_type
        owned = f"skyc-{stack.name}-{owner_hash(OWNER)}"  # the owner's hash in every name
        assert inputs["keyName"] == owned                      # a reference, resolved
        assert volume["volumeType"] == "gp3"
        market = inputs.get("instanceMarketOptions")
        assert (market is not None and market["marketType"] == "spot") == placement.use_spot
        assert inputs["tags"]["Name"].startswith(f"{owned}-")
        assert inputs["tags"]["skyc-owner"] == OWNER
    assert recorded["key_pair"].inputs["publicKey"] == KEY
    # The shared network's ids, given as the stack's inputs, reach the resources.
    assert recorded["security_group"].inputs["vpcId"] == INPUTS["vpc_id"]
    for key in nodes:
        subnet = recorded[key].inputs.get("subnetId")
        assert subnet in (INPUTS["subnet_id"], None)  # None: in its EFA interface
    # Accelerators pick the image: NVIDIA GPU or Neuron images for accelerator nodes.
    tag = image_tag(placement)
    assert ("gpu" in tag or "neuron" in tag) == bool(placement.accelerators)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _expected(value: Any, tf: Any, resolve: Any) -> Any:
    """The terraform value as Pulumi's inputs spell it: argument names of the resource
    and its typed blocks in camelCase (plain maps such as tags keep their keys),
    references resolved the way the mocks resolve them."""
    if isinstance(value, Ref | Var):
        return resolve(tf)
    if isinstance(value, Block):
        return {_camel(k): _expected(v, tf[k], resolve) for k, v in value.values.items()}
    if isinstance(value, list):
        return [_expected(v, t, resolve) for v, t in zip(value, tf, strict=True)]
    if isinstance(value, dict):
        return {k: _expected(v, tf[k], resolve) for k, v in value.items()}
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)                     # the mock runtime's numbers are floats
    return tf


def _resolver(stack: Stack, doc: dict[str, Any]) -> Any:
    by_address = {address(r): r for r in stack.resources}

    def resolve(text: str) -> Any:
        match = re.fullmatch(r"\$\{(var\.(\w+)|(\w+\.\w+)\.(\w+))\}", text)
        assert match, text
        if match.group(2):   # the key is given to the program; other inputs take defaults
            name = match.group(2)
            return INPUTS[name] if name in INPUTS else stack.variables[name].default
        res: Resource = by_address[match.group(3)]
        if match.group(4) == "id":
            return f"{res.key}-id"              # the mocks' ids
        tf_body = doc["resource"][res.types["terraform"]][res.name]
        return _expected(res.properties[match.group(4)], tf_body[match.group(4)], resolve)

    return resolve


@pytest.mark.parametrize("case", AWS_CASES, ids=case_id)
def test_both_emitters_give_the_same_resources_and_arguments(case: Path, tmp_path: Path) -> None:
    stack = compile_case(case, tmp_path)
    doc = to_terraform(stack)
    recorded = _run(stack)
    resolve = _resolver(stack, doc)
    tf_resources = {(t, n) for t, by_name in doc["resource"].items() for n in by_name}
    assert tf_resources == {(r.types["terraform"], r.name) for r in stack.resources}
    for res in stack.resources:
        tf_body = doc["resource"][res.types["terraform"]][res.name]
        renames = {v: k for k, v in res.arg_names.get("pulumi", {}).items()}
        got = {renames.get(_snake(k), _snake(k)): v for k, v in recorded[res.key].inputs.items()}
        want = {k: _expected(v, tf_body[k], resolve) for k, v in res.properties.items()}
        assert {k for k in got if k != "name" or "name" in want} == set(want), res.key
        for key, value in want.items():
            assert got[key] == value, (res.key, key)
    provider = _expected(Block(values=stack.providers["aws"].settings), doc["provider"]["aws"],
                         resolve)
    # A provider's inputs travel as JSON text.
    inputs = {k: _json(v) for k, v in recorded["aws"].inputs.items()}
    assert {k: inputs[k] for k in provider} == provider


def _json(value: Any) -> Any:
    try:
        return json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return value


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def test_a_misspelt_argument_fails(tmp_path: Path) -> None:
    case = next(c for c in AWS_CASES if c.name == "gpu_2node_spot")
    stack = compile_case(case, tmp_path)
    program = emit(stack, "pulumi")["__main__.py"]
    assert _run(stack, program)                                   # as emitted: fine
    nested = program.replace("http_tokens=", "http_tokenz=", 1)   # inside a typed *Args class
    with pytest.raises(EngineError, match="http_tokenz"):
        _run(stack, nested)
    top = program.replace("instance_type=", "instance_typ=", 1)   # a resource's own argument
    with pytest.raises(EngineError, match="instance_typ"):
        _run(stack, top)
