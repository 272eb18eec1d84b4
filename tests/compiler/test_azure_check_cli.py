"""``skyc check`` reports the Azure login and subscription it found, as a subprocess.

No Azure account exists here: the Azure CLI's login is the two files ``az login``
writes (``azureProfile.json``, which holds ids and names only, and the MSAL token
cache, which is only checked for existence), under a temporary HOME.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SUB = "11111111-2222-3333-4444-555555555555"
SECRET = "eyJ0eXAiOiJKV1QiLCJhbGciOi-not-a-real-token"


def _check(home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("AWS_", "GOOGLE_", "AZURE_", "ARM_", "KUBECONFIG"))}
    clean.update(HOME=str(home), SKYC_HOME=str(home / ".skyc"), PYTHONPATH=str(ROOT),
                 COLUMNS="250", **env)
    return subprocess.run([sys.executable, "-m", "skyc", "check"], capture_output=True,
                          text=True, env=clean, timeout=120, cwd=ROOT)


def _azure_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("azure "))


def test_check_shows_the_cli_login_and_subscription(tmp_path: Path) -> None:
    home = tmp_path / "home"
    azure = home / ".azure"
    azure.mkdir(parents=True)
    r = _check(home)
    assert r.returncode == 0, r.stderr
    assert "disabled" in _azure_line(r.stdout)
    assert "no Azure login found (no azureProfile.json" in r.stdout and "az login" in r.stdout
    (azure / "azureProfile.json").write_text(json.dumps({"subscriptions": [
        {"id": SUB, "name": "research", "state": "Enabled", "isDefault": True,
         "tenantId": "t"}]}), encoding="utf-8-sig")
    (azure / "msal_token_cache.json").write_text(json.dumps({"AccessToken": SECRET}))
    r = _check(home)
    assert r.returncode == 0, r.stderr
    line = _azure_line(r.stdout)
    assert "enabled" in line and "Azure CLI login" in line
    assert f"subscription {SUB} from the Azure CLI's default (research)" in line
    assert SECRET not in r.stdout + r.stderr


def test_check_shows_the_service_principal_and_the_config_subscription(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".skyc").mkdir(parents=True)
    (home / ".skyc" / "config.yaml").write_text(f"azure:\n  subscription_id: {SUB}\n")
    r = _check(home, AZURE_CLIENT_ID="app", AZURE_TENANT_ID="tenant",
               AZURE_CLIENT_SECRET=SECRET)
    assert r.returncode == 0, r.stderr
    line = _azure_line(r.stdout)
    assert "enabled" in line and "service principal" in line
    assert f"subscription {SUB} from azure.subscription_id in the config" in line
    assert SECRET not in r.stdout + r.stderr
