"""Reading the kubeconfig: contexts, the current one, merging, and clear reasons."""

from __future__ import annotations

import os
from pathlib import Path

from skyc.compiler.kubernetes.credentials import credentials

GKE = """apiVersion: v1
kind: Config
current-context: gke_ml-platform_us-central1_prod
clusters:
- name: gke_ml-platform_us-central1_prod
  cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==
    server: https://34.118.10.20
contexts:
- name: gke_ml-platform_us-central1_prod
  context: {cluster: gke_ml-platform_us-central1_prod, user: gke_user, namespace: ml}
users:
- name: gke_user
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: gke-gcloud-auth-plugin
      provideClusterInfo: true
"""

EKS = """apiVersion: v1
kind: Config
current-context: arn:aws:eks:us-west-2:111122223333:cluster/ml-prod
clusters:
- name: arn:aws:eks:us-west-2:111122223333:cluster/ml-prod
  cluster: {server: 'https://ABCDEF0123456789.gr7.us-west-2.eks.amazonaws.com'}
- name: gke_ml-platform_us-central1_prod
  cluster: {server: 'https://10.0.0.1'}
contexts:
- name: arn:aws:eks:us-west-2:111122223333:cluster/ml-prod
  context: {cluster: 'arn:aws:eks:us-west-2:111122223333:cluster/ml-prod', user: eks}
- name: gke_ml-platform_us-central1_prod
  context: {cluster: gke_ml-platform_us-central1_prod, user: other}
users:
- name: eks
  user: {token: sekrit-bearer-token-value}
"""


def test_default_location(tmp_path: Path) -> None:
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text(GKE)
    found = credentials(env={}, home=tmp_path)
    assert found.ok and found.current == "gke_ml-platform_us-central1_prod"
    assert found.reason == "1 context in ~/.kube/config (current: gke_ml-platform_us-central1_prod)"
    ctx = found.context()
    assert ctx is not None and (ctx.namespace, ctx.user, ctx.server) == (
        "ml", "gke_user", "https://34.118.10.20")


def test_kubeconfig_list_merges_first_wins(tmp_path: Path) -> None:
    (tmp_path / "gke").write_text(GKE)
    (tmp_path / "eks").write_text(EKS)
    env = {"KUBECONFIG": os.pathsep.join([str(tmp_path / "gke"), str(tmp_path / "missing"),
                                          str(tmp_path / "eks")])}
    found = credentials(env=env, home=tmp_path)
    assert found.ok and found.current == "gke_ml-platform_us-central1_prod"  # first file's
    assert [c.name for c in found.contexts] == [
        "arn:aws:eks:us-west-2:111122223333:cluster/ml-prod", "gke_ml-platform_us-central1_prod"]
    gke = found.context("gke_ml-platform_us-central1_prod")
    assert gke is not None and gke.user == "gke_user" and gke.server == "https://34.118.10.20"
    assert "sekrit" not in repr(found)  # never a credential


def test_missing_kubeconfig_says_why(tmp_path: Path) -> None:
    found = credentials(env={}, home=tmp_path)
    assert not found.ok and "~/.kube/config does not exist" in found.reason
    assert found.hint and "KUBECONFIG" in found.hint
    named = credentials(env={"KUBECONFIG": str(tmp_path / "nope")}, home=tmp_path)
    assert not named.ok and named.reason == f"KUBECONFIG names {tmp_path / 'nope'}: none exists"


def test_broken_kubeconfig_is_reported_by_line_not_quoted(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.write_text("users:\n- name: x\n  user: {token: sekrit-value\n")
    found = credentials(env={"KUBECONFIG": str(bad)}, home=tmp_path)
    assert not found.ok and found.reason.startswith(f"{bad}: not valid YAML (line ")
    assert "sekrit" not in found.reason
    (tmp_path / "empty").write_text("apiVersion: v1\nkind: Config\n")
    empty = credentials(env={"KUBECONFIG": str(tmp_path / "empty")}, home=tmp_path)
    assert not empty.ok and empty.reason.endswith("defines no contexts")


def test_current_context_that_does_not_exist(tmp_path: Path) -> None:
    (tmp_path / "cfg").write_text(GKE.replace("current-context: gke_ml-platform_us-central1_prod",
                                              "current-context: gone"))
    found = credentials(env={"KUBECONFIG": str(tmp_path / "cfg")}, home=tmp_path)
    assert found.ok and found.current is None and found.context() is None
    assert found.reason.endswith("(no current context)")
    assert found.problems == ("current-context 'gone' is not defined",)
