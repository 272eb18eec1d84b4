"""Kubernetes offers: from recorded node lists, from config pools, from the cache,
and read live through the official client.

The node lists in tests/fixtures/kubernetes/ have the shape ``kubectl get nodes -o
json`` prints for a GKE cluster (GPU and TPU node pools), an EKS cluster with
Karpenter, and an on-premises kubeadm cluster with the NVIDIA GPU operator and an
AMD node. No Kubernetes API server can run here: the live read goes through the
real ``kubernetes`` client to a stand-in HTTP server on 127.0.0.1 that answers
``GET /api/v1/nodes`` with a recorded list (or a recorded 403).
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from skyc.catalog import load_catalog
from skyc.catalog.offer import Offer
from skyc.compiler.kubernetes import discovery
from skyc.compiler.kubernetes.config import GpuPool, KubeContext, KubernetesConfig
from skyc.compiler.kubernetes.labels import accelerator_from_labels, gpu_model
from skyc.compiler.kubernetes.nodes import node_list_offers
from skyc.compiler.kubernetes.offers import context_offers, offers_for
from skyc.errors import CatalogError, ConfigError, InfeasibleError
from skyc.optimizer import optimize
from skyc.settings.config import SkycConfig, load_config
from tests.optimizer.helpers import make_task

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kubernetes"


def _nodes(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}-nodes.json").read_text())
    return data


def _table(offers: list[Offer]) -> list[tuple[Any, ...]]:
    return [(o.accelerator, o.accelerator_count, o.max_nodes, o.spot_price is not None)
            for o in offers]


@pytest.mark.parametrize(("raw", "memory_mib", "expected"), [
    ("NVIDIA-H100-80GB-HBM3", None, "H100"),
    ("NVIDIA-A100-SXM4-80GB", None, "A100-80GB"),
    ("NVIDIA-A100-SXM4-40GB", None, "A100"),
    ("NVIDIA-A100-SXM4-40GB-SHARED", None, "A100"),   # time-sliced by GFD: still an A100
    ("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", None, None),  # a MIG slice is not a GPU
    ("Tesla-T4", None, "T4"),
    ("Tesla-V100-SXM2-32GB", None, "V100-32GB"),
    ("NVIDIA-L40S", None, "L40S"),
    ("nvidia-l4", None, "L4"),
    ("nvidia-tesla-a100", None, "A100"),
    ("nvidia-a100-80gb", None, "A100-80GB"),
    ("nvidia-h100-80gb", None, "H100"),
    ("nvidia-h100-mega-80gb", None, "H100-MEGA"),
    ("nvidia-h200-141gb", None, "H200"),
    ("a100", 81920, "A100-80GB"),
    ("a100", 40960, "A100"),
    ("a10g", 24576, "A10G"),
    ("AMD_Instinct_MI300X_OAM", None, "MI300X"),
])
def test_gpu_model_names(raw: str, memory_mib: float | None, expected: str | None) -> None:
    assert gpu_model(raw, memory_mib) == expected


@pytest.mark.parametrize(("labels", "expected"), [
    ({"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
      "cloud.google.com/gke-tpu-topology": "2x4"}, "tpu-v5litepod-8"),
    ({"cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice",
      "cloud.google.com/gke-tpu-topology": "2x2x1"}, "tpu-v5p-8"),
    ({"cloud.google.com/gke-tpu-accelerator": "tpu-v4-podslice",
      "cloud.google.com/gke-tpu-topology": "2x2x2"}, "tpu-v4-16"),
    ({"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
      "cloud.google.com/gke-tpu-topology": "4x4"}, "tpu-v6e-16"),
    ({"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice"}, None),  # no topology
    ({"example.com/gpu": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.product": "Tesla-T4"}, "H100"),
])
def test_accelerator_from_labels(labels: dict[str, str], expected: str | None) -> None:
    assert accelerator_from_labels(labels, "example.com/gpu") == expected


def test_tpu_v5e_is_the_catalogs_name() -> None:
    # The name a slice is offered under is the one the cloud catalog and tasks use.
    cat = load_catalog()
    assert cat.canonical_accelerator("tpu-v5e-8") == "tpu-v5litepod-8"
    assert cat.canonical_accelerator("tpu-v5p-8") == "tpu-v5p-8"


def test_gke_node_pools() -> None:
    result = node_list_offers("gke_ml_us-central1_prod", _nodes("gke"))
    assert result.source == "cluster"
    assert _table(result.offers) == [
        (None, 0, 2, False),                 # default-pool, CPU only
        ("H100", 8, 2, False),
        ("L4", 1, 3, False),
        ("T4", 2, 1, True),                  # spot pool; its second node is not Ready
        ("tpu-v5litepod-16", 1, 1, False),   # 4 hosts x 4 chips: one slice
        ("tpu-v5litepod-8", 1, 1, False),    # one host, 2x4
    ]
    assert all(o.cloud == "kubernetes" and o.region == "gke_ml_us-central1_prod"
               and not o.elastic and o.instance_type is None for o in result.offers)
    h100 = result.offers[1]
    assert (h100.vcpus, h100.memory_gib, h100.accelerator_memory_gib, h100.arch) == (
        207.68, 1814.0, 80, "x86_64")
    assert h100.price == 0.0 and h100.spot_price is None
    l4 = result.offers[2]
    assert l4.memory_gib == 26.3  # the smallest of the pool's nodes
    assert result.notes == ["node gke-ml-prod-t4-spot-9f8e7d6c-w2w2: not Ready"]


def test_eks_karpenter_nodes() -> None:
    result = node_list_offers("arn:aws:eks:us-west-2:111122223333:cluster/ml-prod",
                              _nodes("eks-karpenter"), prices={None: 1.5})
    table = _table(result.offers)
    assert (None, 0, 2, False) in table                      # the managed system nodegroup
    assert ("A100", 8, 1, False) in table                    # p4d: 40 GiB per GPU
    assert ("A10G", 1, 3, True) in table                     # Karpenter spot capacity
    assert ("H100", 8, 2, False) in table
    by_acc = {o.accelerator: o for o in result.offers}
    assert by_acc["A100"].accelerator_memory_gib == 40.0
    assert by_acc["H100"].price == 12.0                      # 8 GPUs x 1.5
    assert by_acc["A10G"].spot_price == 1.5 and by_acc["A10G"].price is None
    assert by_acc[None].price == 0.0                         # chargeback is per GPU
    assert result.notes == []


def test_gpu_operator_cluster() -> None:
    result = node_list_offers("onprem", _nodes("gpu-operator"))
    assert _table(result.offers) == [
        (None, 0, 1, False), ("H100", 8, 2, False), ("L40S", 4, 1, False),
        ("MI300X", 8, 1, False),
    ]
    notes = "\n".join(result.notes)
    assert "cp-01: tainted node-role.kubernetes.io/control-plane" in notes
    assert "gpu-h100-03: cordoned" in notes                  # the third H100 node
    assert "gpu-a100-mig-01: 7 nvidia.com/gpu are MIG slices" in notes
    h100 = result.offers[1]
    assert h100.accelerator_memory_gib == 79.6               # nvidia.com/gpu.memory, MiB


def test_unknown_gpu_model_says_which_label_to_set() -> None:
    data = _nodes("gpu-operator")
    for node in data["items"]:
        node["metadata"]["labels"].pop("nvidia.com/gpu.product", None)
    notes = "\n".join(node_list_offers("onprem", data).notes)
    assert "gpu-h100-01: 8 nvidia.com/gpu of an unknown model" in notes
    assert "kubernetes.accelerator_label" in notes
    for node in data["items"]:
        if node["metadata"]["name"].startswith("gpu-h100"):
            node["metadata"]["labels"]["example.com/model"] = "NVIDIA-H100-80GB-HBM3"
    offers = node_list_offers("onprem", data, accelerator_label="example.com/model").offers
    assert ("H100", 8, 2, False) in _table(offers)


def test_config_pools_plan_without_access(tmp_path: Path) -> None:
    kube = KubernetesConfig(contexts={
        "prod": KubeContext(namespace="ml", pools=[
            GpuPool(accelerator="h100", count_per_node=8, nodes=2, price_per_gpu_hour=2.5),
            GpuPool(accelerator="tpu-v5e-8", nodes=1, price_per_gpu_hour=1.0),
            GpuPool(cpus=16, memory=64, nodes=4)]),
    })
    result = context_offers(kube, "prod", home=tmp_path)
    assert result.source == "config"
    assert [(o.accelerator, o.accelerator_count, o.max_nodes, o.price) for o in result.offers] == [
        ("H100", 8, 2, 20.0), ("tpu-v5litepod-8", 1, 1, 8.0), (None, 0, 4, 0.0)]
    cfg = SkycConfig(kubernetes=kube)
    task = make_task({"num_nodes": 2, "candidates": [
        {"accelerator": {"name": "H100", "count": 8}, "infra": {"cloud": "kubernetes"}}]})
    cat = load_catalog(clouds=[], fixed=offers_for(cfg, home=tmp_path))
    p = optimize([task], cat).tasks[0].placement
    assert (p.cloud, p.region, p.num_nodes, p.hourly_cost) == ("kubernetes", "prod", 2, 40.0)
    assert p.infra == "kubernetes/prod"


def test_config_section_is_validated(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("kubernetes:\n  contexts:\n    prod:\n      pools:\n"
                    "        - {accelerator: H100, count_per_nod: 8}\n")
    with pytest.raises(ConfigError, match=r"kubernetes\.contexts\.prod\.pools\.0\.count_per_nod"):
        load_config(path)
    path.write_text("kubernetes:\n  prefer: true\n  contexts:\n    prod:\n      pools:\n"
                    "        - {accelerator: H100, count_per_node: 8, nodes: 2}\n")
    assert load_config(path).kubernetes.contexts["prod"].pools[0].nodes == 2
    assert SkycConfig().kubernetes.contexts == {}


def test_cache_is_read_offline_and_holds_no_secrets(tmp_path: Path) -> None:
    ctx = "arn:aws:eks:us-west-2:111122223333:cluster/ml-prod"
    data = _nodes("eks-karpenter")
    path = discovery.write_cache(ctx, data, home=tmp_path)
    assert path.parent == tmp_path / "kubernetes" and "/" not in path.name[:-5]
    text = path.read_text()
    assert '"annotations"' not in text and '"addresses"' not in text
    assert '"nodeInfo"' not in text
    # Read again later: the same file, the same bytes but for read_at (deterministic).
    discovery.write_cache(ctx, json.loads(json.dumps(data)), home=tmp_path)
    again = path.read_text()
    assert [ln for ln in again.splitlines() if "read_at" not in ln] == [
        ln for ln in text.splitlines() if "read_at" not in ln]
    cached = context_offers(KubernetesConfig(), ctx, home=tmp_path)
    assert cached.source == "cluster" and cached.read_at
    assert _table(cached.offers) == _table(node_list_offers(ctx, data).offers)
    assert discovery.cached_contexts(tmp_path) == [ctx]
    assert [o.region for o in offers_for(SkycConfig(), home=tmp_path)] == [ctx] * 4


def test_cache_wins_over_pools_and_prices_read_nodes(tmp_path: Path) -> None:
    discovery.write_cache("onprem", _nodes("gpu-operator"), home=tmp_path)
    kube = KubernetesConfig(contexts={"onprem": KubeContext(pools=[
        GpuPool(accelerator="H100", count_per_node=8, nodes=9, price_per_gpu_hour=3.0)])})
    offers = context_offers(kube, "onprem", home=tmp_path).offers
    h100 = next(o for o in offers if o.accelerator == "H100")
    assert (h100.max_nodes, h100.price) == (2, 24.0)  # nodes as read, the pool's price


def test_corrupt_cache_is_a_clear_error(tmp_path: Path) -> None:
    path = discovery.cache_path("prod", tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.raises(CatalogError, match="unreadable node cache") as err:
        discovery.read_cache("prod", tmp_path)
    assert err.value.hint and "prod" in err.value.hint


class _Api(http.server.BaseHTTPRequestHandler):
    """Answers the node list as an API server would; records each request's path."""

    answers: ClassVar[dict[str, tuple[int, dict[str, Any]]]] = {}
    seen: ClassVar[list[tuple[str, str | None]]] = []

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("Authorization")))
        status, body = self.answers.get(self.path.split("?")[0], (404, {"kind": "Status"}))
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def api_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        _Api.answers.clear()
        _Api.seen.clear()


def _kubeconfig(tmp_path: Path, server: str) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: lab\n"
        f"clusters:\n- name: lab\n  cluster: {{server: '{server}'}}\n"
        "contexts:\n- name: lab\n  context: {cluster: lab, user: ci, namespace: ml}\n"
        "users:\n- name: ci\n  user: {token: placeholder-token}\n")
    return path


def test_live_read_through_the_client(tmp_path: Path, api_server: str) -> None:
    pytest.importorskip("kubernetes")
    _Api.answers["/api/v1/nodes"] = (200, _nodes("gke"))
    name, path = discovery.refresh(kubeconfig=_kubeconfig(tmp_path, api_server), home=tmp_path)
    assert name == "lab"
    assert _Api.seen == [("/api/v1/nodes", "Bearer placeholder-token")]
    assert "placeholder-token" not in path.read_text()
    offers = offers_for(SkycConfig(), "lab", home=tmp_path)
    assert _table(offers) == _table(node_list_offers("lab", _nodes("gke")).offers)


def test_live_read_forbidden_names_rbac(tmp_path: Path, api_server: str) -> None:
    pytest.importorskip("kubernetes")
    _Api.answers["/api/v1/nodes"] = (403, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'nodes is forbidden: User "system:serviceaccount:ml:ci" cannot list '
                   'resource "nodes" in API group "" at the cluster scope',
        "reason": "Forbidden", "details": {"kind": "nodes"}, "code": 403})
    with pytest.raises(CatalogError, match="listing nodes is forbidden: nodes is forbidden") as e:
        discovery.refresh("lab", kubeconfig=_kubeconfig(tmp_path, api_server), home=tmp_path)
    assert e.value.hint and "kubernetes.contexts.<name>.pools" in e.value.hint
    assert discovery.cached_contexts(tmp_path) == []        # nothing half-written


def test_live_read_unknown_context_and_unreachable(tmp_path: Path, api_server: str) -> None:
    pytest.importorskip("kubernetes")
    kubeconfig = _kubeconfig(tmp_path, api_server)
    with pytest.raises(CatalogError, match=r"kubeconfig: .*nope"):
        discovery.read_nodes("nope", kubeconfig=kubeconfig)
    dead = _kubeconfig(tmp_path, "http://127.0.0.1:9")  # discard port: nothing listens
    with pytest.raises(CatalogError, match="cannot reach the API server"):
        discovery.read_nodes("lab", kubeconfig=dead, timeout=2)


def test_planning_does_not_import_the_client() -> None:
    import subprocess
    import sys

    code = ("import sys, skyc.settings.config, skyc.compiler.kubernetes.offers, "
            "skyc.compiler.kubernetes.errors, skyc.compiler.kubernetes.credentials; "
            "print('kubernetes' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"


def test_plan_from_the_last_read(tmp_path: Path) -> None:
    ctx = "gke_ml_us-central1_prod"
    discovery.write_cache(ctx, _nodes("gke"), home=tmp_path)
    cat = load_catalog(clouds=[], fixed=offers_for(SkycConfig(), home=tmp_path))
    tpu = make_task({"candidates": [{"accelerator": {"name": "tpu-v5e-16", "count": 1}}]})
    p = optimize([tpu], cat).tasks[0].placement
    assert (p.infra, p.accelerators) == (f"kubernetes/{ctx}", {"tpu-v5litepod-16": 1})
    h100 = make_task({"num_nodes": 2, "candidates": [{"accelerator": {"name": "H100",
                                                                      "count": 8}}]})
    assert optimize([h100], cat).tasks[0].placement.num_nodes == 2
    three = make_task({"num_nodes": 3, "candidates": [{"accelerator": {"name": "H100",
                                                                       "count": 8}}]})
    with pytest.raises(InfeasibleError):
        optimize([three], cat)  # two H100 nodes in the context


def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str) -> dict[str, str]:
    """A user home with a kubeconfig of two contexts, and a SKYC_HOME with ``config``."""
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text(
        "current-context: gke\ncontexts:\n- name: gke\n  context: {cluster: c}\n"
        "- name: lab\n  context: {cluster: c}\n"
        "clusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:9'}\n")
    home = tmp_path / "skyc"
    home.mkdir()
    (home / "config.yaml").write_text(config)
    monkeypatch.setenv("SKYC_HOME", str(home))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    discovery.write_cache("gke", _nodes("gke"), home=home)
    return {"HOME": str(tmp_path)}


LAB = ("kubernetes:\n  contexts:\n    lab:\n      pools:\n"
       "        - {accelerator: A100, count_per_node: 8, nodes: 2, price_per_gpu_hour: 9}\n")


def test_infra_k8s_plans_with_the_contexts_offers(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from skyc.apply.infra import catalog_for

    _home(tmp_path, monkeypatch, LAB)
    config = load_config()
    for infra in ("k8s", "kubernetes", "k8s/lab"):
        task = make_task({"num_nodes": 2, "candidates": [
            {"accelerator": {"name": "A100", "count": 8}}]})
        cat = catalog_for(config, [task], infra=infra)
        p = optimize([task], cat, infra=infra).tasks[0].placement
        assert (p.infra, p.num_nodes, p.hourly_cost) == ("kubernetes/lab", 2, 144.0)
    tpu = make_task({"candidates": [{"accelerator": {"name": "tpu-v5e-16", "count": 1},
                                     "infra": {"cloud": "kubernetes", "region": "gke"}}]})
    p = optimize([tpu], catalog_for(config, [tpu])).tasks[0].placement
    assert p.infra == "kubernetes/gke"


def test_infra_k8s_with_no_offers_says_how_to_get_some(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No context read and no pools in the config: the verdict is the target's own hint."""
    from skyc.apply.infra import catalog_for

    (tmp_path / "skyc").mkdir()
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "skyc"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    config = load_config()
    task = make_task({"candidates": [{"accelerator": {"name": "A100", "count": 8}}]})
    cat = catalog_for(config, [task], infra="k8s")
    with pytest.raises(InfeasibleError) as err:
        optimize([task], cat, infra="k8s")
    assert "skyc check --refresh" in str(err.value), str(err.value)
    assert "kubernetes.contexts.<context>.pools" in str(err.value)


def test_prefer_makes_a_task_without_infra_choose_the_cluster(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lab's chargeback ($72/h for A100:8) is dearer than AWS; prefer: true still
    picks it, and without prefer cost decides."""
    from skyc.apply.infra import catalog_for

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    _home(tmp_path, monkeypatch, LAB)
    task = make_task({"candidates": [{"accelerator": {"name": "A100", "count": 8}}]})
    cheapest = optimize([task], catalog_for(load_config(), [task])).tasks[0].placement
    assert cheapest.cloud == "aws" and cheapest.hourly_cost < 72
    (tmp_path / "skyc" / "config.yaml").write_text(LAB + "  prefer: true\n")
    preferred = optimize([task], catalog_for(load_config(), [task])).tasks[0].placement
    assert (preferred.infra, preferred.hourly_cost) == ("kubernetes/lab", 72.0)
    h100 = make_task({"candidates": [{"accelerator": {"name": "H100", "count": 8},
                                      "infra": {"cloud": "aws"}}]})
    assert optimize([h100], catalog_for(load_config(), [h100])).tasks[0].placement.cloud \
        == "aws"  # a task that names its infra is not moved


def test_check_says_what_each_context_offers(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from skyc.apply.infra import check_infra
    from skyc.cli import app

    env = _home(tmp_path, monkeypatch, LAB + "    never:\n      namespace: x\n")
    status = {s.name: s for s in check_infra(load_config(), env=env, home=tmp_path)}
    kube = status["kubernetes"]
    assert kube.enabled and "nothing to plan" not in kube.reason
    lines = {line.split(":", 1)[0]: line for line in kube.details}
    assert "H100:8 x2" in lines["kubernetes/gke"] and "read " in lines["kubernetes/gke"]
    assert any(line.startswith("  left out: node ") for line in kube.details)
    assert "A100:8 x2 $72/hr/node (from the config's pools)" in lines["kubernetes/lab"]
    assert "nothing usable" in lines["kubernetes/never"]
    result = CliRunner().invoke(app, ["check"], env={"HOME": str(tmp_path),
                                                     "SKYC_HOME": str(tmp_path / "skyc")})
    assert result.exit_code == 0, result.output
    assert "kubernetes/gke: H100:8 x2" in result.output


def test_check_refresh_reads_each_context_and_plans_offline_after(
        tmp_path: Path, api_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("kubernetes")
    from typer.testing import CliRunner

    from skyc.cli import app

    _Api.answers["/api/v1/nodes"] = (200, _nodes("gke"))
    kubeconfig = _kubeconfig(tmp_path, api_server)
    env = {"HOME": str(tmp_path), "SKYC_HOME": str(tmp_path / "skyc"),
           "KUBECONFIG": str(kubeconfig)}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    result = CliRunner().invoke(app, ["check", "--refresh"], env=env)
    assert result.exit_code == 0, result.output
    assert "kubernetes/lab: nodes read" in result.output
    assert "kubernetes/lab: H100:8 x2" in result.output
    assert discovery.cached_contexts(tmp_path / "skyc") == ["lab"]
    assert "placeholder-token" not in discovery.cache_path("lab", tmp_path / "skyc").read_text()
    _Api.answers["/api/v1/nodes"] = (403, {"kind": "Status", "message": "nodes is forbidden",
                                           "code": 403})
    result = CliRunner().invoke(app, ["check", "--refresh"], env=env)
    assert result.exit_code == 0, result.output
    assert "kubernetes/lab: listing nodes is forbidden" in result.output
    assert "kubernetes/lab: H100:8 x2" in result.output  # the last read still plans
