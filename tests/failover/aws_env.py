"""What the AWS failover tests share: a moto server behind the fault proxy, a
SKYC_HOME pointed at it, `skyc` run as a subprocess, and a leak check.

Everything is real: the terraform binary and AWS provider, moto on 127.0.0.1,
the fault proxy (stdlib HTTP server) answering chosen RunInstances calls with
EC2's own error responses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.fault_proxy import FaultProxy
from tests.support.moto_server import CREDENTIALS, MotoServer
from tests.support.terraform import plugin_dir

# A cheap type whose catalog rows in us-east-1 are all real EC2 zones (c6i/m6i
# list the Atlanta local zone first, which moto does not know), priced alike in
# us-east-1, us-east-2 and us-west-2: ties break on region, then zone.
INSTANCE_TYPE = "inf1.xlarge"
REGIONS = ("us-east-1", "us-east-2", "us-west-2")


@dataclass
class AwsHome:
    home: Path
    moto: MotoServer
    proxy: FaultProxy

    def env(self) -> dict[str, str]:
        env = {**os.environ, **CREDENTIALS, "SKYC_HOME": str(self.home),
               "COLUMNS": "200", "NO_COLOR": "1"}
        env.pop("AWS_PROFILE", None)
        mirror = plugin_dir()
        if mirror:
            env["SKYC_TF_PLUGIN_DIR"] = mirror
        return env

    def task(self, name: str, infra: str, run: str | None = None) -> Path:
        lines = [f"name: {name}", "resources:", f"  infra: {infra}",
                 f"  instance_type: {INSTANCE_TYPE}", "  disk_tier: low"]
        if run:
            lines.append(f"run: {run}")
        path = self.home.parent / f"{name}.yaml"
        path.write_text("\n".join(lines) + "\n")
        return path

    def skyc(self, *args: str, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "skyc", *args], env=self.env(), capture_output=True,
            text=True, timeout=timeout, stdin=subprocess.DEVNULL,
        )

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "skyc", *args], env=self.env(), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL,
        )

    def status(self, *args: str) -> list[dict[str, Any]]:
        out = self.skyc("status", "--format", "json", *args)
        assert out.returncode == 0, out.stderr
        rows: list[dict[str, Any]] = json.loads(out.stdout)["clusters"]
        return rows

    def workspace(self, cluster: str) -> Path:
        return self.home / "clusters" / cluster


def make_home(root: Path, moto: MotoServer, proxy: FaultProxy, user: str | None = None
              ) -> AwsHome:
    """A SKYC_HOME against ``moto`` through ``proxy``; ``user``: the config's user (a
    second person sharing the account gets a home of their own with another name)."""
    home = root / "skyc-home"
    home.mkdir(parents=True)
    who = f"user: {user}\n" if user else ""
    (home / "config.yaml").write_text(
        f"{who}infra: [aws]\naws:\n  endpoint_url: {proxy.url}\n"
    )
    return AwsHome(home=home, moto=moto, proxy=proxy)


def network_state_ids(home: Path) -> set[str]:
    """The ids of every resource in the terraform states of the home's shared networks."""
    ids: set[str] = set()
    for workspace in sorted((home / "networks").glob("*")):
        ids |= state_ids(workspace)
    return ids


def owned_ids(home: Path, *clusters: str) -> set[str]:
    """What the home's skyc owns on the cloud: the clusters' resources and the shared
    networks they are in."""
    ids = network_state_ids(home)
    for cluster in clusters:
        ids |= state_ids(home / "clusters" / cluster)
    return ids


def state_ids(workspace: Path) -> set[str]:
    """The ids of every resource in the workspace's terraform state."""
    state = workspace / "terraform.tfstate"
    if not state.exists():
        return set()
    doc = json.loads(state.read_text())
    ids = set()
    for resource in doc.get("resources", []):
        for inst in resource.get("instances", []):
            attrs = inst.get("attributes") or {}
            for key in ("id", "key_pair_id"):
                if attrs.get(key):
                    ids.add(str(attrs[key]))
            if resource.get("type") == "aws_instance":
                for dev in attrs.get("root_block_device") or []:
                    if dev.get("volume_id"):
                        ids.add(str(dev["volume_id"]))
    return ids


def cloud_resources(moto: MotoServer) -> dict[str, set[str]]:
    """Everything in moto that the user created: instances, volumes, VPCs and their
    parts, security groups and key pairs (the defaults AWS makes are left out)."""
    found: dict[str, set[str]] = {}
    for region in REGIONS:
        ec2 = moto.client("ec2", region)
        live = [
            i for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]
            if i["State"]["Name"] not in ("terminated", "shutting-down")
        ]
        vpcs = [v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"] if not v.get("IsDefault")]
        found[region + " instances"] = {i["InstanceId"] for i in live}
        found[region + " volumes"] = {
            v["VolumeId"] for v in ec2.describe_volumes()["Volumes"] if v["State"] != "deleted"
        }
        found[region + " vpcs"] = set(vpcs)
        found[region + " subnets"] = {
            s["SubnetId"] for s in ec2.describe_subnets()["Subnets"] if s["VpcId"] in vpcs
        }
        found[region + " security groups"] = {
            g["GroupId"] for g in ec2.describe_security_groups()["SecurityGroups"]
            if g["GroupName"] != "default"
        }
        found[region + " key pairs"] = {
            k["KeyPairId"] for k in ec2.describe_key_pairs()["KeyPairs"]
        }
        found[region + " internet gateways"] = {
            g["InternetGatewayId"] for g in ec2.describe_internet_gateways()["InternetGateways"]
            if any(a["VpcId"] in vpcs for a in g.get("Attachments", []))
            or not g.get("Attachments")
        }
    return found


def leaks(moto: MotoServer, owned: set[str]) -> dict[str, set[str]]:
    """Resources in moto that no terraform state owns (empty when nothing leaked)."""
    out = {}
    for kind, ids in cloud_resources(moto).items():
        extra = ids - owned
        if extra:
            out[kind] = extra
    return out


def live_instances(moto: MotoServer, region: str) -> list[dict[str, Any]]:
    ec2 = moto.client("ec2", region)
    return [
        i for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]
        if i["State"]["Name"] not in ("terminated", "shutting-down")
    ]
