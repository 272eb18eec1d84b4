"""Kubernetes lowering: every golden program runs under Pulumi's mock runtime (the real
pulumi_kubernetes classes), and every Pod and Service it registers is validated against
the Kubernetes API's own JSON schema in strict mode (kubernetes-validate), for the oldest
and the newest supported version. No API server can run here, so what the API server and
the scheduler would add (admission, defaulting, placement) is not covered."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from skyc.compiler import build_stack, choose_engine, nodes_from_outputs
from skyc.compiler.kubernetes import manifest, selectors
from skyc.compiler.kubernetes.lowering import AMD_IMAGE, DEFAULT_IMAGE, SUPPORTED_VERSIONS
from skyc.compiler.kubernetes.nodes import node_list_offers
from skyc.errors import ConfigError, EngineError, UnsupportedFeature
from skyc.model.owner import owner_hash
from skyc.model.plan import Placement
from skyc.settings.config import SkycConfig
from skyc.stacks.pulumi_preview import run_program
from skyc.stacks.pulumi_python import program
from skyc.task.candidate import ResourceCandidate
from tests.compiler.golden import OWNER, ROOT, compile_case, load

CASES = sorted(p.parent for p in (ROOT / "kubernetes").glob("*/placement.json"))
NODE_LISTS = Path(__file__).resolve().parents[1] / "fixtures" / "kubernetes"


def _ints(value: Any) -> Any:
    """Numbers as the manifest holds them: the mock runtime carries every number as a
    protobuf double (22 -> 22.0)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ints(v) for v in value]
    return value


def manifests(case: Path, tmp_path: Path) -> list[dict[str, Any]]:
    stack = compile_case(case, tmp_path)
    recorded = run_program(program(stack), stack=stack.name)
    out = []
    for res in recorded:
        if res.type.startswith("pulumi:providers:"):
            continue
        out.append(_ints(json.loads(json.dumps(res.inputs, default=str))))
    return out


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_manifest_validates_strictly(case: Path, version: str, tmp_path: Path) -> None:
    found = manifests(case, tmp_path)
    kinds = sorted(m["kind"] for m in found)
    assert "Pod" in kinds and "Service" in kinds
    for m in found:
        kubernetes_validate.validate(m, version, strict=True)


def test_the_cases_cover_what_they_are_named_for(tmp_path: Path) -> None:
    by_case = {c.name: manifests(c, tmp_path) for c in CASES}

    def pods(name: str) -> list[dict[str, Any]]:
        # by name: the mock runtime registers resources in no fixed order
        return sorted((m for m in by_case[name] if m["kind"] == "Pod"),
                      key=lambda m: str(m["metadata"]["name"]))

    l4 = pods("l4_single")[0]["spec"]
    assert l4["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert l4["containers"][0]["resources"]["requests"] == {
        "cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}
    assert l4["volumes"][0] == {"emptyDir": {"medium": "Memory", "sizeLimit": "13Gi"},
                                "name": "dshm"}
    h100 = pods("h100_network_best")
    owned = owner_hash(OWNER)  # the golden cases' owner: in every name
    assert [p["metadata"]["name"] for p in h100] == [f"h100-network-best-{owned}-head",
                                                     f"h100-network-best-{owned}-worker1"]
    assert all(p["metadata"]["namespace"] == "training" for p in h100)
    assert h100[1]["spec"]["containers"][0]["resources"]["limits"] == {
        "nvidia.com/gpu": "8", "rdma/ib": "1"}
    assert h100[0]["spec"]["affinity"]["podAffinity"]
    assert h100[0]["metadata"]["labels"]["Project-Name"] == "pre-train-v2"
    amd = pods("amd_mi300x")[0]["spec"]
    assert amd["containers"][0]["image"].startswith("rocm/pytorch:")
    assert amd["tolerations"][0]["key"] == "amd.com/gpu"
    tpu = pods("tpu_slice")
    assert len(tpu) == 2  # two single-host tpu-v5litepod-8 slices: a pod each
    assert tpu[1]["spec"]["nodeSelector"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-tpu-topology": "2x4"}
    assert tpu[1]["spec"]["containers"][0]["resources"]["limits"] == {"google.com/tpu": "8"}
    ports = [m for m in by_case["two_nodes_ports"]
             if m["kind"] == "Service" and m["spec"].get("type") == "LoadBalancer"]
    assert [p["port"] for p in ports[0]["spec"]["ports"]] == [8080, 9000, 9001, 9002]
    merged = pods("pod_config_merged")[0]
    assert merged["metadata"]["annotations"] == {  # the engine's wait: pending_timeout
        "example.com/owner": "ml-platform", "pulumi.com/timeoutSeconds": "600"}
    assert merged["spec"]["imagePullSecrets"] == [{"name": "ghcr"}]
    container = merged["spec"]["containers"][0]
    assert container["name"] == "node" and container["env"][0]["name"] == "HF_HOME"
    assert [v["name"] for v in merged["spec"]["volumes"]] == ["dshm", "cache"]
    assert merged["spec"]["tolerations"][-1]["key"] == "dedicated"


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_a_misspelt_field_fails_validation(version: str, tmp_path: Path) -> None:
    """pod_config is a plain mapping, which Pulumi passes through unchecked: the schema
    catches the typo."""
    case = ROOT / "kubernetes" / "pod_config_merged"
    cluster, placement, candidate, config = load(case)
    data = config.model_dump()
    data["kubernetes"]["pod_config"]["spec"]["nodeSelektor"] = {"pool": "a"}
    bad = SkycConfig.model_validate(data)
    stack = build_stack(cluster, placement, candidate, config=bad, workspace=tmp_path)
    pod = next(r for r in run_program(program(stack), stack=cluster)
               if r.type == "kubernetes:core/v1:Pod")
    with pytest.raises(kubernetes_validate.ValidationError, match="nodeSelektor"):
        kubernetes_validate.validate(_ints(pod.inputs), version, strict=True)


def test_terraform_is_refused() -> None:
    assert choose_engine("kubernetes", None, SkycConfig()) == "pulumi"
    with pytest.raises(UnsupportedFeature, match="engines for kubernetes: pulumi"):
        choose_engine("kubernetes", "terraform", SkycConfig())


def _placement(**kw: Any) -> Placement:
    return Placement(**{"cloud": "kubernetes", "region": "ctx", "hourly_cost": 0.0, **kw})


def _pod(placement: Placement, candidate: ResourceCandidate, tmp_path: Path,
         config: SkycConfig | None = None) -> dict[str, Any]:
    """The head pod as the program registers it under the mock runtime."""
    stack = build_stack("c", placement, candidate, config=config or SkycConfig(),
                        workspace=tmp_path)
    recorded = run_program(program(stack), stack="c")
    pod = next(r for r in recorded if r.type == "kubernetes:core/v1:Pod")
    return dict(_ints(json.loads(json.dumps(pod.inputs, default=str))))


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_default_images_find_the_accelerator_driver(version: str, tmp_path: Path) -> None:
    """GKE mounts the NVIDIA driver at /usr/local/nvidia: NVIDIA pods on the default
    image find nvidia-smi and libcuda there (PATH, LD_LIBRARY_PATH); AMD pods default
    to a ROCm image; a task's own image is left as it is. Each pod validates strictly."""
    nvidia = _pod(_placement(accelerators={"L4": 1}), ResourceCandidate(index=0), tmp_path)
    container = nvidia["spec"]["containers"][0]
    assert container["image"] == DEFAULT_IMAGE
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["PATH"].split(":")[0] == "/usr/local/nvidia/bin"
    assert {"/usr/local/bin", "/usr/bin", "/bin"} <= set(env["PATH"].split(":"))
    assert "/usr/local/nvidia/lib64" in env["LD_LIBRARY_PATH"].split(":")
    amd = _pod(_placement(accelerators={"MI300X": 8}), ResourceCandidate(index=0), tmp_path)
    assert amd["spec"]["containers"][0]["image"] == AMD_IMAGE
    assert "env" not in amd["spec"]["containers"][0]
    own = _pod(_placement(accelerators={"L4": 1}),
               ResourceCandidate(index=0, image_id="docker:nvcr.io/nvidia/pytorch:24.05-py3"),
               tmp_path)
    assert "env" not in own["spec"]["containers"][0]
    cpu = _pod(_placement(), ResourceCandidate(index=0), tmp_path)
    assert "env" not in cpu["spec"]["containers"][0]
    for pod in (nvidia, amd, own, cpu):
        kubernetes_validate.validate(pod, version, strict=True)


@pytest.mark.parametrize(("slice_", "hosts"), [("tpu-v5litepod-16", 4), ("tpu-v4-16", 2),
                                                ("tpu-v6e-32", 8)])
def test_multi_host_tpu_slices_are_refused(slice_: str, hosts: int, tmp_path: Path) -> None:
    """The pods of a multi-host slice could land on hosts of two different slices: refused
    with the reason; a single-host slice is one pod."""
    with pytest.raises(UnsupportedFeature) as info:
        build_stack("c", _placement(accelerators={slice_: 1}), ResourceCandidate(index=0),
                    config=SkycConfig(), workspace=tmp_path)
    assert info.value.message.startswith(
        f"accelerators: {slice_} is a multi-host TPU slice ({hosts} hosts)")
    assert "not supported" in info.value.message and "single-host" in (info.value.hint or "")
    single = build_stack("c", _placement(accelerators={"tpu-v5litepod-8": 1}),
                         ResourceCandidate(index=0), config=SkycConfig(), workspace=tmp_path)
    assert [r.key for r in single.resources if r.key.startswith("node_")] == ["node_0"]


def test_bad_input_is_refused_by_field(tmp_path: Path) -> None:
    def build(placement: Placement, candidate: ResourceCandidate,
              config: SkycConfig | None = None) -> None:
        build_stack("c", placement, candidate, config=config or SkycConfig(), workspace=tmp_path)

    with pytest.raises(UnsupportedFeature, match="not a container image") as info:
        build(_placement(), ResourceCandidate(index=0, image_id="ami-123"))
    assert info.value.hint and "docker:IMAGE" in info.value.hint
    with pytest.raises(ConfigError, match="ports"):
        build(_placement(), ResourceCandidate(index=0, ports=("80-70",)))
    with pytest.raises(UnsupportedFeature, match="at most 100"):
        build(_placement(), ResourceCandidate(index=0, ports=("9000-9200",)))
    with pytest.raises(ConfigError, match="no context"):
        build(_placement(region=None), ResourceCandidate(index=0))
    with pytest.raises(UnsupportedFeature, match="whole number"):
        build(_placement(accelerators={"T4": 0.5}), ResourceCandidate(index=0))
    odd = SkycConfig.model_validate({"kubernetes": {"pod_config": {"spek": {}}}})
    with pytest.raises(ConfigError, match="pod_config: unexpected key 'spek'"):
        build(_placement(), ResourceCandidate(index=0), odd)
    with pytest.raises(ConfigError, match="labels"):
        manifest.label_key("!!!")


def _matches(term: dict[str, Any], labels: dict[str, str]) -> bool:
    return all(labels.get(e["key"]) in e["values"] for e in term["matchExpressions"])


@pytest.mark.parametrize("fixture", ["gke-nodes.json", "eks-karpenter-nodes.json",
                                     "gpu-operator-nodes.json"])
def test_the_affinity_of_each_offer_selects_the_nodes_it_came_from(fixture: str) -> None:
    """The selectors and the label parser agree on every recorded node."""
    nodes = json.loads((NODE_LISTS / fixture).read_text())
    offers = node_list_offers("ctx", nodes).offers
    gpus = [o for o in offers if o.accelerator and not o.accelerator.startswith("tpu-")]
    assert gpus
    for offer in gpus:
        assert offer.accelerator is not None
        spot = offer.spot_price is not None
        affinity = selectors.gpu_affinity(offer.accelerator, spot=spot, custom_label=None)
        terms = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        selected = [n["metadata"]["name"] for n in nodes["items"]
                    if any(_matches(t, n["metadata"]["labels"]) for t in terms)]
        assert len(selected) >= (offer.max_nodes or 1), offer


def test_nodes_from_outputs(tmp_path: Path) -> None:
    outputs = {"context": "ctx", "namespace": "ml", "pods": ["c-head", "c-worker1"],
               "pod_ips": ["10.4.0.7", "10.4.1.9"], "service": "c"}
    found = nodes_from_outputs("kubernetes", "c", outputs, config=SkycConfig(),
                               workspace=tmp_path)
    assert [(n.rank, n.transport, n.pod, n.namespace, n.context, n.ip) for n in found] == [
        (0, "kubernetes", "c-head", "ml", "ctx", "10.4.0.7"),
        (1, "kubernetes", "c-worker1", "ml", "ctx", "10.4.1.9")]
    with pytest.raises(EngineError, match="pod_ips"):
        nodes_from_outputs("kubernetes", "c", {"context": "ctx", "pods": []},
                           config=SkycConfig(), workspace=tmp_path)


def test_pod_config_cannot_take_the_pod_from_skyc(tmp_path: Path) -> None:
    config = SkycConfig.model_validate({"user": "bob", "kubernetes": {"pod_config": {
        "metadata": {"name": "other", "labels": {"skyc-cluster": "x", "skyc-owner": "eve"}},
        "spec": {"hostname": "h", "containers": [{"name": "sidecar", "image": "busybox"}]}}}})
    stack = build_stack("c1", _placement(), ResourceCandidate(index=0), config=config,
                        workspace=tmp_path)
    pod = copy.deepcopy(stack.resource("node_0").properties)
    assert pod["metadata"]["name"] == f"c1-{owner_hash('bob')}-head"
    assert pod["metadata"]["labels"]["skyc-cluster"] == "c1"
    assert pod["metadata"]["labels"]["skyc-owner"] == "bob"
    assert pod["spec"]["hostname"] == "head"
    assert [c["name"] for c in pod["spec"]["containers"]] == ["node", "sidecar"]


def test_karpenter_memory_tells_the_a100_sizes_apart() -> None:
    nodes = json.loads((NODE_LISTS / "eks-karpenter-nodes.json").read_text())
    big = copy.deepcopy(next(n for n in nodes["items"] if n["metadata"]["labels"].get(
        "karpenter.k8s.aws/instance-gpu-name") == "a100"))
    big["metadata"]["name"] = "a100-80gb-node"
    big["metadata"]["labels"]["karpenter.k8s.aws/instance-gpu-memory"] = "81920"
    nodes["items"].append(big)
    offers = {o.accelerator for o in node_list_offers("ctx", nodes).offers}
    assert {"A100", "A100-80GB"} <= offers
    terms = selectors.gpu_affinity("A100-80GB", spot=False, custom_label=None)[
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    selected = [n["metadata"]["name"] for n in nodes["items"]
                if any(_matches(t, n["metadata"]["labels"]) for t in terms)]
    assert selected == ["a100-80gb-node"]


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_a_63_character_cluster_name_keeps_every_name_apart(version: str,
                                                             tmp_path: Path) -> None:
    cluster = "a" * 63
    stack = build_stack(cluster, _placement(num_nodes=11),
                        ResourceCandidate(index=0, ports=("8080",)), config=SkycConfig(),
                        workspace=tmp_path)
    names = [r.properties["metadata"]["name"] for r in stack.resources]
    assert len(set(names)) == len(names) == 13
    for res in stack.resources:
        kind = "Pod" if res.key.startswith("node_") else "Service"
        kubernetes_validate.validate({"apiVersion": "v1", "kind": kind, **res.properties},
                                     version, strict=True)
    assert all(len(n) <= 63 for r, n in zip(stack.resources, names, strict=True)
               if not r.key.startswith("node_"))


def test_cluster_names_that_differ_stay_apart() -> None:
    assert manifest.dns_name("train-1") == "train-1"
    names = {manifest.dns_name(n) for n in ("a_b", "a-b", "A-b", "9lives", "x" * 63)}
    assert len(names) == 5
    assert all(len(n) <= 63 and n[0].isalpha() and n == n.lower() for n in names)
