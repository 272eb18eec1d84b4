"""Regenerate tests/fixtures/errors/aws/<Code>.jsonl from real terraform runs.

For each EC2 error code, a real ``terraform apply -json`` of one ``aws_instance``
runs against a moto server through :class:`FaultProxy`, which answers
RunInstances in the faulted zone with that code. The ``diagnostic`` lines of
the apply's output are saved verbatim, one JSON object a line.

Usage::

    python -m tests.support.record_fault_fixtures [--out DIR] [CODE ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.support.fault_proxy import FaultProxy, FaultRule
from tests.support.moto_server import start_moto

FIXTURE_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "errors" / "aws"
PLUGIN_DIR = "/opt/tf-plugins"
REGION = "us-east-1"
FAULTED_ZONE = "us-east-1a"
INSTANCE_TYPE = "t3.micro"

CODES = [
    "InsufficientInstanceCapacity",
    "VcpuLimitExceeded",
    "Unsupported",
    "InstanceLimitExceeded",
    "MaxSpotInstanceCountExceeded",
    "SpotMaxPriceTooLow",
    "InsufficientHostCapacity",
    "AuthFailure",
    "InvalidParameterValue",
]
SPOT_CODES = {"MaxSpotInstanceCountExceeded", "SpotMaxPriceTooLow"}


def terraform_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION=REGION,
        TF_IN_AUTOMATION="1",
        CHECKPOINT_DISABLE="1",
    )
    for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "TF_LOG"):
        env.pop(key, None)
    return env


def stack(proxy_url: str, moto_url: str, ami: str, *, spot: bool, zone: str) -> dict[str, Any]:
    """A one-instance Terraform JSON config aimed at the proxy."""
    instance: dict[str, Any] = {
        "ami": ami,
        "instance_type": INSTANCE_TYPE,
        "availability_zone": zone,
        "tags": {"Name": "skyc-fault-fixture"},
    }
    if spot:
        instance["instance_market_options"] = {
            "market_type": "spot",
            "spot_options": {"max_price": "0.001"},
        }
        instance["lifecycle"] = {"ignore_changes": ["instance_market_options"]}
    return {
        "terraform": {
            "required_providers": {"aws": {"source": "hashicorp/aws", "version": "5.100.0"}}
        },
        "provider": {
            "aws": {
                "region": REGION,
                "max_retries": 1,
                "skip_credentials_validation": True,
                "skip_metadata_api_check": True,
                "skip_region_validation": True,
                "skip_requesting_account_id": True,
                "endpoints": [{"ec2": proxy_url, "sts": moto_url}],
            }
        },
        "resource": {"aws_instance": {"node": instance}},
    }


def moto_ami(moto_url: str) -> str:
    import boto3

    client = boto3.client(
        "ec2",
        region_name=REGION,
        endpoint_url=moto_url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    images = client.describe_images(Owners=["amazon"])["Images"]
    images = images or client.describe_images()["Images"]
    return str(sorted(img["ImageId"] for img in images)[0])


def terraform_init(workdir: Path) -> None:
    subprocess.run(
        ["terraform", "init", "-input=false", "-no-color", f"-plugin-dir={PLUGIN_DIR}"],
        cwd=workdir, env=terraform_env(), check=True, capture_output=True, timeout=120,
    )


def terraform_apply_json(workdir: Path, timeout: float = 300) -> tuple[int, list[str]]:
    """Run ``terraform apply -json``; return its exit status and its output lines."""
    proc = subprocess.run(
        ["terraform", "apply", "-json", "-auto-approve", "-input=false"],
        cwd=workdir, env=terraform_env(), capture_output=True, text=True, timeout=timeout,
    )
    return proc.returncode, proc.stdout.splitlines()


def diagnostic_lines(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if obj.get("type") == "diagnostic":
            out.append(line)
    return out


def record_one(
    workdir: Path, proxy: FaultProxy, moto_url: str, ami: str, code: str
) -> list[str]:
    """Apply one faulted instance; return the diagnostic lines (empty if none)."""
    (workdir / "main.tf.json").write_text(
        json.dumps(
            stack(proxy.url, moto_url, ami, spot=code in SPOT_CODES, zone=FAULTED_ZONE),
            indent=2, sort_keys=True,
        )
        + "\n"
    )
    proxy.set_rules([FaultRule(action="RunInstances", code=code, zone=FAULTED_ZONE)])
    _, lines = terraform_apply_json(workdir)
    return diagnostic_lines(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("codes", nargs="*", default=CODES)
    parser.add_argument("--out", type=Path, default=FIXTURE_DIR)
    args = parser.parse_args(argv)
    if shutil.which("terraform") is None:
        print("terraform is not on PATH", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="skyc-faults-") as tmp, \
            start_moto(Path(tmp) / "moto.log", skyc_amis=False, front=False) as moto, \
            FaultProxy(moto.url) as proxy:
        workdir = Path(tmp)
        ami = moto_ami(moto.url)
        (workdir / "main.tf.json").write_text(
            json.dumps(stack(proxy.url, moto.url, ami, spot=False, zone=FAULTED_ZONE))
        )
        terraform_init(workdir)
        failed = []
        for code in args.codes:
            lines = record_one(workdir, proxy, moto.url, ami, code)
            if not any(f"api error {code}" in line for line in lines):
                print(f"{code}: no diagnostic naming the code", file=sys.stderr)
                failed.append(code)
                continue
            (args.out / f"{code}.jsonl").write_text("\n".join(lines) + "\n")
            print(f"{code}: {len(lines)} diagnostic line(s) -> {args.out / (code + '.jsonl')}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
