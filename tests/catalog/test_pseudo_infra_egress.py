"""Fixed machines (local, SSH pools), which infra is enabled, and egress figures."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from skyc.apply.infra import check_infra, enabled_infra
from skyc.catalog import OfferQuery, load_catalog, local_offers, ssh_offers
from skyc.catalog.egress import egress_cost, egress_seconds, internet_egress_cost
from skyc.errors import ConfigError
from skyc.settings.config import SkycConfig, SshPool


def test_local_offer_describes_this_machine(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi: no GPUs, no error
    [offer] = local_offers()
    assert offer.cloud == "local" and offer.region == "local" and offer.price == 0.0
    assert offer.vcpus == os.cpu_count()
    assert offer.memory_gib is not None and offer.memory_gib > 0
    assert offer.accelerator is None and not offer.elastic


def test_local_offer_reads_nvidia_smi(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # This machine has no NVIDIA GPU: a stand-in nvidia-smi prints what a 2 x A100 80GB host prints.
    exe = tmp_path / "nvidia-smi"
    exe.write_text("#!/bin/sh\necho 'NVIDIA A100-SXM4-80GB, 81920'\n"
                   "echo 'NVIDIA A100-SXM4-80GB, 81920'\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    [offer] = local_offers()
    assert (offer.accelerator, offer.accelerator_count, offer.accelerator_memory_gib) == (
        "A100-80GB", 2, 80.0)


def test_ssh_pools_become_offers() -> None:
    pools = {"lab": SshPool(hosts=["10.0.0.5", "10.0.0.6"], accelerators="A100:8", cpus=64),
             "cpu": SshPool(hosts=["10.0.0.7"], accelerators={"T4": 1})}
    offers = {o.region: o for o in ssh_offers(pools)}
    assert offers["lab"].accelerator == "A100" and offers["lab"].accelerator_count == 8
    assert offers["lab"].max_nodes == 2 and offers["lab"].vcpus == 64
    assert offers["cpu"].accelerator == "T4"
    cat = load_catalog(clouds=[], fixed=ssh_offers(pools))
    assert [o.region for o in cat.offers(OfferQuery(accelerator="A100", accelerator_count=4))] \
        == ["lab"]
    with pytest.raises(ConfigError, match=r"ssh_pools\.bad\.accelerators"):
        ssh_offers({"bad": SshPool(hosts=["h"], accelerators="A100:lots")})


def test_infra_from_credentials(tmp_path: Path) -> None:
    cfg = SkycConfig(ssh_pools={"lab": SshPool(hosts=["h1"])})
    bare = {s.name: s for s in check_infra(cfg, env={}, home=tmp_path)}
    assert not bare["aws"].enabled and bare["aws"].reason.startswith("no credentials found")
    assert bare["local"].enabled and bare["ssh/lab"].enabled
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "credentials").write_text("[default]\n")
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text("contexts:\n- name: lab\n  context: {}\n")
    key = tmp_path / "sa.json"  # the GCP target reads the key's type and project
    key.write_text('{"type": "service_account", "project_id": "proj-123"}')
    env = {"GOOGLE_APPLICATION_CREDENTIALS": str(key)}
    st = {s.name: s for s in check_infra(cfg, env=env, home=tmp_path)}
    assert st["aws"].enabled and "~/.aws/credentials" in st["aws"].reason
    assert st["gcp"].enabled and "GOOGLE_APPLICATION_CREDENTIALS" in st["gcp"].reason
    assert not st["azure"].enabled
    assert st["kubernetes"].enabled and "1 context in ~/.kube/config" in st["kubernetes"].reason
    # As SkyPilot never picks the laptop: local only when named, once a cloud is enabled.
    assert not st["local"].enabled and "not chosen while aws, gcp, kubernetes" in st["local"].reason
    assert "local" not in enabled_infra(cfg, ["azure/eastus"], env={}, home=tmp_path)
    assert enabled_infra(cfg, ["azure/eastus", "local"], env={}, home=tmp_path) >= {
        "azure", "local"}


def test_infra_from_config_list(tmp_path: Path) -> None:
    cfg = SkycConfig(infra=["gcp", "ssh/lab"], ssh_pools={"lab": SshPool(hosts=["h"]),
                                                         "other": SshPool(hosts=["h"])})
    names = enabled_infra(cfg, env={"AWS_ACCESS_KEY_ID": "x"}, home=tmp_path)
    assert names == {"gcp", "ssh/lab"}


def test_egress_figures() -> None:
    assert internet_egress_cost("aws", 1000) == pytest.approx(0.09 * 999)
    assert internet_egress_cost("gcp", 1000) == pytest.approx(120.0)
    assert internet_egress_cost("gcp", 2048) == pytest.approx(0.11 * 2048)
    assert internet_egress_cost("azure", 1000) == pytest.approx(0.0875 * 995)
    assert internet_egress_cost("aws", 20 * 1024) == pytest.approx(
        0.09 * (10 * 1024 - 1) + 0.085 * 10 * 1024)
    assert egress_cost("aws", "us-east-1", "aws", "us-east-1", 500) == 0.0
    assert egress_cost("aws", "us-east-1", "aws", "us-west-2", 500) == pytest.approx(10.0)
    assert egress_cost("local", "local", "aws", "us-east-1", 500) == 0.0
    assert egress_seconds("aws", "a", "gcp", "b", 10) == pytest.approx(8.0)
