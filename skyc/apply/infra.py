"""Which infra skyc considers, and why.

With ``infra:`` in ``$SKYC_HOME/config.yaml``, exactly those. Otherwise: clouds
whose credentials are present (cheap local checks only, nothing is called),
plus ``local``, plus every SSH pool in the config. ``resources.infra`` in the
task and ``--infra`` on the command line restrict further; an infra named
explicitly there is considered even without credentials (planning is offline).
Kubernetes is enabled by a kubeconfig; it has no price catalog: its contexts
offer what their last read nodes (or the config's pools) hold.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from skyc.settings.config import SkycConfig

if TYPE_CHECKING:
    from skyc.catalog import Catalog
    from skyc.compiler.base import OwnOffers


def clouds() -> tuple[str, ...]:
    """The registry's clouds, in the order `skyc check` lists them."""
    from skyc.compiler import cloud_names

    return cloud_names()


class InfraStatus(NamedTuple):
    name: str          # aws, gcp, azure, kubernetes, local, ssh/<pool>
    enabled: bool
    reason: str
    details: tuple[str, ...] = ()  # one line per part (a Kubernetes context's offers)
    # A cloud's: whether its credentials were found (listed in config infra or not);
    # None for infra that needs none (local, SSH pools).
    credentials: bool | None = None


def normalize(name: str) -> str:
    from skyc.task._parse import canonical_cloud

    return canonical_cloud(name.strip().split("/")[0])


def _credentials(
    cloud: str, env: Mapping[str, str], home: Path, config: SkycConfig | None = None
) -> str | None:
    from skyc.compiler import credentials, is_target

    if is_target(cloud):
        check = credentials(cloud, env, home, config)
        return check.reason if check.ok else None
    return None


def _not_found(
    cloud: str, env: Mapping[str, str], home: Path, config: SkycConfig | None
) -> tuple[str, ...]:
    """For a registered target without usable credentials: what its check found, and
    what to set to apply there."""
    from skyc.compiler import credentials, is_target

    if not is_target(cloud):
        return ()
    check = credentials(cloud, env, home, config)
    if check.ok:
        return ()
    return (check.reason, *([f"to apply: {check.hint}"] if check.hint else []))


def check_infra(config: SkycConfig, env: Mapping[str, str] | None = None,
                home: Path | None = None) -> list[InfraStatus]:
    """Every infra skyc knows about, whether it is enabled, and why."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home()) if home is None else home
    pools = sorted(config.ssh_pools)
    listed = {normalize(n) for n in config.infra} if config.infra is not None else None
    listed_full = {n.strip().lower() for n in config.infra or []}
    out = []
    for cloud in clouds():
        cred = _credentials(cloud, env, home, config)
        if listed is not None:
            on = cloud in listed
            why = "listed in config infra" if on else "not listed in config infra"
        else:
            on = cred is not None
            why = cred if cred else "no credentials found"
        details: tuple[str, ...] = ()
        if cred is None:
            details = _not_found(cloud, env, home, config)
            if details:
                why += f": plan only (`skyc plan --infra {cloud}` plans offline)"
        own = _own_offers(cloud) if on else None
        if own is not None:  # what a target without a price catalog offers, and whence
            details = tuple(own.describe(config, env, home))
        out.append(InfraStatus(cloud, on, why, details, credentials=cred is not None))
    if listed is None:
        # As SkyPilot never picks the laptop: this machine is planned over when no cloud
        # is enabled, or when named (--infra local, resources.infra: local).
        clouds_on = [s.name for s in out if s.enabled]
        out.append(InfraStatus(
            "local", not clouds_on,
            "no cloud is enabled" if not clouds_on else
            f"not chosen while {', '.join(clouds_on)} is enabled: name it (--infra local, "
            "resources.infra: local) to run here"))
    else:
        out.append(InfraStatus("local", "local" in listed,
                               "listed in config infra" if "local" in listed
                               else "not listed in config infra"))
    for pool in pools:
        name = f"ssh/{pool}"
        if listed is None or name in listed_full or "ssh" in listed_full:
            out.append(InfraStatus(name, True, f"ssh_pools.{pool} in config"))
        else:
            out.append(InfraStatus(name, False, "not listed in config infra"))
    return out


def enabled_infra(config: SkycConfig, explicit: Iterable[str] = (),
                  env: Mapping[str, str] | None = None, home: Path | None = None) -> set[str]:
    """Names to plan with: enabled ones, plus any named explicitly (task or --infra).

    Returns cloud names (``aws``...), ``local`` and ``ssh/<pool>`` entries;
    an explicit bare ``ssh`` enables every pool.
    """
    names = {s.name for s in check_infra(config, env, home) if s.enabled}
    for item in explicit:
        if not item or item.strip() in ("*", ""):
            continue
        head = normalize(item)
        if head == "ssh":
            parts = item.strip().split("/")
            if len(parts) > 1 and parts[1] not in ("", "*"):
                names.add(f"ssh/{parts[1]}")
            else:
                names |= {f"ssh/{p}" for p in config.ssh_pools}
        elif head != "*":
            names.add(head)
    return names


def explicit_infra(tasks: Iterable[Any], cli_infra: str | None = None) -> list[str]:
    """Infra named in the tasks' resources (any candidate) and on the command line."""
    names = [cli_infra] if cli_infra else []
    for task in tasks:
        for cand in task.candidates():
            cloud = cand.infra.cloud
            if cloud == "ssh" and cand.infra.region:
                names.append(f"ssh/{cand.infra.region}")
            elif cloud:
                names.append(cloud)
    return names


class PlanScope(NamedTuple):
    """What a plan covers, and what it left out.

    ``names``: the infra planned over (priced clouds, ``local``, ``ssh/<pool>``).
    ``plan_only``: priced clouds planned over although not enabled, because no
    priced cloud was (planning is offline; applying there needs credentials).
    ``skipped``: priced clouds with offers that skyc cannot provision (not a
    registered target): never planned over. ``disabled``: provisionable priced
    clouds left out because they are not enabled (a cheaper placement there is
    worth a line).
    """

    names: frozenset[str]
    plan_only: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    disabled: tuple[str, ...] = ()


def _priced(catalog_dir: Path | None) -> list[str]:
    from skyc.catalog import load_catalog

    return load_catalog(catalog_dir).priced_clouds


def plan_scope(config: SkycConfig, tasks: Iterable[Any] = (), *, infra: str | None = None,
               catalog_dir: Path | None = None, fall_back: bool = False) -> PlanScope:
    """The infra a plan covers. Priced clouds that skyc cannot provision (not in
    ``compiler.target_names()``, read now: targets register over time) are skipped, and
    naming one explicitly is refused. With ``fall_back`` (``skyc plan``), when no
    priced cloud is enabled and neither the config's ``infra:``, the task nor
    ``--infra`` restricts the choice, every provisionable priced cloud is planned
    over, marked plan-only."""
    from skyc.compiler import is_target, target

    tasks = list(tasks)
    explicit = explicit_infra(tasks, infra)
    names = set(enabled_infra(config, explicit))
    priced = _priced(catalog_dir)
    for item in explicit:
        head = normalize(item)
        if head in priced and not is_target(head):
            target(head)  # raises: skyc cannot provision there yet
    skipped = sorted(c for c in priced if not is_target(c) and (c in names or fall_back))
    names -= set(skipped)
    wanted = normalize(infra) if infra and infra.strip() not in ("", "*") else None
    if wanted is not None and wanted != "*":
        # --infra names one cloud: no other cloud's catalog is read.
        names = {n for n in names if normalize(n) == wanted}
    usable = [c for c in priced if is_target(c)]
    chosen = [c for c in usable if c in names]
    restricted = bool(explicit) or config.infra is not None
    plan_only: list[str] = []
    if fall_back and not chosen and not restricted:
        plan_only = usable
        names |= set(usable)
    disabled = [] if restricted else [c for c in usable if c not in names]
    return PlanScope(frozenset(names), tuple(plan_only), tuple(skipped), tuple(disabled))


def catalog_for(config: SkycConfig, tasks: Iterable[Any] = (), *, infra: str | None = None,
                catalog_dir: Path | None = None, every_cloud: bool = False,
                scope: PlanScope | None = None) -> Catalog:
    """The catalog to plan with: priced clouds that are enabled or named explicitly
    (by a task or ``infra``) and that skyc can provision, this machine when
    ``local`` is enabled, and the enabled SSH pools (or exactly ``scope``'s
    names). ``every_cloud``: every priced cloud (for browsing)."""
    from skyc.catalog import load_catalog, local_offers, ssh_offers
    from skyc.catalog.reservations import configured_reservations

    if scope is None and not every_cloud:
        scope = plan_scope(config, tasks, infra=infra, catalog_dir=catalog_dir)
    names = set(scope.names) if scope is not None else enabled_infra(
        config, explicit_infra(tasks, infra))
    pools = {p: config.ssh_pools[p] for p in config.ssh_pools if f"ssh/{p}" in names}
    fixed = (local_offers() if "local" in names else []) + ssh_offers(pools)
    hints: dict[str, str] = {}
    for name in sorted(names):  # targets with no price catalog bring their own offers
        own = _own_offers(name)
        if own is not None:
            fixed += own.offers_for(config)
            hints[name] = own.EMPTY_HINT
    catalog = load_catalog(catalog_dir, clouds=None if every_cloud else names, fixed=fixed,
                           reservations=configured_reservations(config))
    catalog.empty_hints = hints
    return catalog


def _own_offers(name: str) -> OwnOffers | None:
    from skyc.compiler import is_target, own_offers

    return own_offers(name) if is_target(name) else None



def missing_credentials(cloud: str, env: Mapping[str, str] | None = None,
                        home: Path | None = None,
                        config: SkycConfig | None = None) -> str | None:
    """None when ``cloud`` can be provisioned from here; else what to set.

    Planning never needs credentials; provisioning does, and checking first keeps
    an engine from probing the network for credentials it will not find.
    """
    from skyc.compiler import credentials

    if cloud not in clouds():
        return None
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home()) if home is None else home
    check = credentials(cloud, env, home, config)
    return None if check.ok else f"no {cloud} credentials found: {check.hint}"
