"""Kubernetes naming rules and the ``kubernetes.pod_config`` merge.

Labels: a key is an optional DNS-subdomain prefix and ``/`` and a name of at most
63 characters (alphanumerics, ``-``, ``_``, ``.``, alphanumeric at both ends); a
value the same, or empty. The task's labels are made to fit (other characters
become ``-``, long ones are cut), never dropped silently: a key with nothing
left is refused naming it. Service names are DNS-1035 labels made from the
cluster name (with a short hash when it had to change) and its owner's hash (two
people's clusters of one name in one namespace differ); pod names add the node.

``pod_config`` is SkyPilot's pass-through: a fragment of a Pod manifest
(``metadata``, ``spec``) merged into the one skyc writes. Mappings merge key by
key; lists of named items (containers, volumes, env, volumeMounts, ports) merge
item by name, and a container without a name merges into skyc's container; other
lists (tolerations, imagePullSecrets) are appended to; scalars from the config
win. What makes the pod skyc's own (its name, namespace, cluster label, hostname
and subdomain) is written back after the merge.
"""

from __future__ import annotations

import copy
import hashlib
import re
from typing import Any

from skyc.errors import ConfigError

_NAME_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
_DNS_LABEL = re.compile(r"[^a-z0-9-]+")
# The longest Service name of a cluster with an owner: "-ports" makes the ports
# Service's name from it within DNS-1035's 63 characters.
MAX_OWNED = 57
_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _label_part(text: str) -> str:
    return _NAME_CHARS.sub("-", text)[:63].strip("-_.")


def label_key(key: str) -> str:
    prefix, _, name = key.rpartition("/")
    clean = _label_part(name)
    if not clean:
        raise ConfigError(f"labels: {key!r} cannot be a Kubernetes label key",
                          hint="use letters, digits, '-', '_' and '.'")
    if prefix:
        prefix = prefix.lower()[:253]
        if not _PREFIX.match(prefix):
            raise ConfigError(f"labels: the prefix of {key!r} is not a DNS subdomain",
                              hint="write it like example.com/name")
        return f"{prefix}/{clean}"
    return clean


def label_value(value: str) -> str:
    return _label_part(str(value))


def labels(raw: dict[str, str]) -> dict[str, str]:
    """Labels made to fit Kubernetes' rules, sorted."""
    return dict(sorted((label_key(k), label_value(v)) for k, v in raw.items()))


def dns_name(text: str, owner_hash: str = "") -> str:
    """A DNS-1035 label from a cluster name (lowercase, ``_`` -> ``-``, a letter first);
    a name that had to change gets a short hash of the original, so ``a_b`` and
    ``a-b`` stay two names. ``owner_hash`` (the cluster's owner's) ends the name and is
    never cut; such a name is at most :data:`MAX_OWNED` long, so ``-ports`` fits."""
    name = _DNS_LABEL.sub("-", text.lower()).strip("-")
    if not name or not name[0].isalpha():
        name = f"c-{name}".rstrip("-")
    tail = f"-{owner_hash}" if owner_hash else ""
    limit = MAX_OWNED if owner_hash else 63
    if name == text and len(name) + len(tail) <= limit:
        return name + tail
    digest = hashlib.sha256(text.encode()).hexdigest()[:6]
    return f"{name[:limit - 7 - len(tail)].rstrip('-')}-{digest}{tail}"


_NAMED_LISTS = {"containers", "initContainers", "volumes", "env", "volumeMounts", "ports",
                "ephemeralContainers"}


def _merge_named(ours: list[Any], theirs: list[Any], key: str) -> list[Any]:
    out = [copy.deepcopy(x) for x in ours]
    for item in theirs:
        if not isinstance(item, dict):
            out.append(copy.deepcopy(item))
            continue
        name = item.get("name")
        if name is None and key == "containers" and out:
            out[0] = merge(out[0], item)
            continue
        at = next((i for i, x in enumerate(out) if isinstance(x, dict) and x.get("name") == name),
                  None)
        if at is None:
            out.append(copy.deepcopy(item))
        else:
            out[at] = merge(out[at], item)
    return out


def merge(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    """``theirs`` deep-merged into a copy of ``ours``."""
    out = copy.deepcopy(ours)
    for key, value in theirs.items():
        mine = out.get(key)
        if isinstance(mine, dict) and isinstance(value, dict):
            out[key] = merge(mine, value)
        elif isinstance(mine, list) and isinstance(value, list):
            out[key] = (_merge_named(mine, value, key) if key in _NAMED_LISTS
                        else [*mine, *copy.deepcopy(value)])
        else:
            out[key] = copy.deepcopy(value)
    return out


def check_pod_config(pod_config: dict[str, Any]) -> None:
    """Refuse a pod_config that is not a Pod fragment, naming the key."""
    extra = sorted(set(pod_config) - {"metadata", "spec", "apiVersion", "kind"})
    if extra:
        raise ConfigError(f"kubernetes.pod_config: unexpected key {extra[0]!r}",
                          hint="pod_config is a Pod manifest fragment: metadata and spec")
    for key in ("metadata", "spec"):
        if key in pod_config and not isinstance(pod_config[key], dict):
            raise ConfigError(f"kubernetes.pod_config.{key}: expected a mapping")
    if pod_config.get("kind", "Pod") != "Pod":
        raise ConfigError("kubernetes.pod_config.kind: only Pod fragments are merged")
