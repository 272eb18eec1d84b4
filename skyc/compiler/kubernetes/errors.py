"""Classify Kubernetes failures (pod statuses, events, API refusals) as ProvisionErrors.

A context is the target's "region" (``infra: kubernetes/CONTEXT``): no room in a
context (insufficient GPUs, no node of the model, untolerated taints, an
exhausted ResourceQuota, a pod unscheduled past the timeout) blocks that
context, and failover tries the next context or cloud. Errors another placement
cannot fix stop with the fix: RBAC refusals, rejected credentials, Pod Security
admission, an image that cannot be pulled, a container config that cannot be
made.

When several diagnostics classify, the one that stops the launch wins over the
ones failover could step around (a bad image fails on every context).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from skyc.errors import ProvisionError, ProvisionFailure, Scope
from skyc.model.diagnostics import Diagnostic
from skyc.model.plan import Placement

CLOUD = "kubernetes"


@dataclass(frozen=True)
class _Rule:
    code: str
    pattern: re.Pattern[str]
    scope: Scope
    retryable: bool
    hint: str | None = None


def _rule(code: str, pattern: str, scope: Scope, retryable: bool, hint: str | None = None
          ) -> _Rule:
    return _Rule(code, re.compile(pattern, re.IGNORECASE), scope, retryable, hint)


# In order: what stops the launch first, then the specific capacity errors.
RULES: tuple[_Rule, ...] = (
    _rule("Forbidden", r"cannot (?:create|get|list|watch|patch|update|delete) resource",
          "region", False,
          "grant the kubeconfig user RBAC for pods and services in the namespace (a Role "
          "and RoleBinding), or set kubernetes.contexts.<context>.namespace to one it may use"),
    _rule("PodSecurity", r"violates PodSecurity", "region", False,
          "the namespace's Pod Security level refuses the pod: use a namespace that allows "
          "it, or adjust kubernetes.pod_config"),
    _rule("Unauthorized", r"\bUnauthorized\b|provide credentials", "region", False,
          "the API server refused the credentials: refresh them for this kubeconfig context"),
    _rule("ImagePullError",
          r"ErrImagePull|ImagePullBackOff|InvalidImageName|ErrImageNeverPull|"
          r"Failed to pull image|Back-off pulling image", "cloud", False,
          "check the task's image_id (docker:IMAGE): the name and tag exist and the cluster "
          "may pull it (imagePullSecrets in kubernetes.pod_config for a private registry)"),
    _rule("ContainerConfigError", r"CreateContainerConfigError|CreateContainerError",
          "cloud", False,
          "the pod's container could not be made (a missing Secret or ConfigMap, or a bad "
          "field in kubernetes.pod_config): see the message"),
    _rule("QuotaExceeded", r"exceeded quota", "region", True),
    _rule("InsufficientCapacity",
          r"\bInsufficient [\w./-]+|requested number of devices unavailable|OutOf[a-z]",
          "region", True),
    _rule("UntoleratedTaint", r"untolerated taint", "region", True,
          "the context's nodes carry taints the pod does not tolerate: add tolerations in "
          "kubernetes.pod_config"),
    _rule("NoMatchingNode", r"didn't match (?:Pod's )?node (?:affinity|selector)",
          "region", True,
          "no node in the context has the accelerator's label (see kubernetes.accelerator_label)"),
    _rule("PendingTimeout", r"^PendingTimeout:|timed out waiting to be Ready", "region", True,
          "the pods were not scheduled within kubernetes.pending_timeout: the context has no "
          "room for them now"),
    _rule("Unschedulable", r"nodes are available|^Unschedulable:", "region", True),
)


def _match(diag: Diagnostic) -> _Rule | None:
    text = diag.text
    return next((r for r in RULES if r.pattern.search(text)), None)


def classify(diagnostics: Sequence[Diagnostic], placement: Placement | None
             ) -> ProvisionError | None:
    """The error failover should act on, or None when nothing is recognised."""
    matched = [(RULES.index(rule), i, diag, rule) for i, diag in enumerate(diagnostics)
               if diag.severity == "error" and (rule := _match(diag)) is not None]
    if not matched:
        return None
    _, _, diag, rule = min(matched, key=lambda m: (m[0], m[1]))
    failure = ProvisionFailure(
        code=rule.code, scope=rule.scope, retryable=rule.retryable, cloud=CLOUD,
        region=placement.region if placement else None, zone=None,
        resource=diag.address, raw=diag.text,
    )
    where = placement.infra if placement else CLOUD
    summary = " ".join(diag.summary.split())
    return ProvisionError(f"{where}: {rule.code}: {summary}", failure, hint=rule.hint)
