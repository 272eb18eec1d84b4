"""What the Kubernetes contexts offer the optimizer, from cached reads and config pools.

``offers_for(config)`` is the catalog hook for ``infra: kubernetes`` (``k8s``):
each context's offers come from its last read (see :mod:`discovery`) when there
is one, else from the pools the config describes. Region = context name.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from skyc.catalog.offer import Offer
from skyc.compiler.kubernetes import discovery
from skyc.compiler.kubernetes.config import GpuPool, KubeContext, KubernetesConfig
from skyc.compiler.kubernetes.labels import (
    accelerator_memory_gib,
    canonical_accelerator,
    slice_chips,
)
from skyc.compiler.kubernetes.nodes import CLOUD, ContextOffers, node_list_offers
from skyc.settings.config import SkycConfig


def _pool_accelerator(pool: GpuPool) -> str | None:
    return canonical_accelerator(pool.accelerator) if pool.accelerator else None


def _chips(model: str, count: float) -> float:
    """Accelerators a price per GPU-hour counts: a TPU slice's chips, else the count."""
    return float(slice_chips(model) or count) if model.startswith("tpu-") else count


def pool_offers(context: str, settings: KubeContext) -> ContextOffers:
    """Offers of the pools a context's config describes (no access to the cluster needed)."""
    offers = []
    for pool in settings.pools:
        model = _pool_accelerator(pool)
        per_gpu = pool.price_per_gpu_hour if pool.price_per_gpu_hour is not None \
            else settings.price_per_gpu_hour or 0.0
        price = round(per_gpu * _chips(model, pool.count_per_node), 6) if model else 0.0
        offers.append(Offer(
            cloud=CLOUD, region=context, zone=None, instance_type=None,
            accelerator=model, accelerator_count=pool.count_per_node if model else 0,
            accelerator_memory_gib=accelerator_memory_gib(model, {}) if model else None,
            vcpus=pool.cpus, memory_gib=pool.memory,
            price=None if pool.spot else price, spot_price=price if pool.spot else None,
            elastic=False, max_nodes=pool.nodes,
        ))
    return ContextOffers(context, offers, [], "config")


def _prices(settings: KubeContext | None) -> dict[str | None, float]:
    if settings is None:
        return {}
    prices: dict[str | None, float] = {}
    if settings.price_per_gpu_hour is not None:
        prices[None] = settings.price_per_gpu_hour
    for pool in settings.pools:
        model = _pool_accelerator(pool)
        if pool.price_per_gpu_hour is not None and model:
            prices[model] = pool.price_per_gpu_hour
    return prices


def context_offers(kube: KubernetesConfig, context: str, home: Path | None = None
                   ) -> ContextOffers:
    """One context's offers: its cached read if there is one, else its config pools."""
    settings = kube.contexts.get(context)
    cached = discovery.read_cache(context, home)
    if cached is not None:
        return node_list_offers(context, cached["nodes"], accelerator_label=kube.accelerator_label,
                                prices=_prices(settings), read_at=str(cached.get("read_at")))
    if settings is not None:
        return pool_offers(context, settings)
    return ContextOffers(context, [], [f"context {context}: never read and not described in "
                                       "the config (kubernetes.contexts)"], "config")


def known_contexts(kube: KubernetesConfig, home: Path | None = None) -> list[str]:
    """Contexts described in the config or read before, sorted."""
    return sorted(set(kube.contexts) | set(discovery.cached_contexts(home)))


def offers_for(config: SkycConfig, context: str | None = None, *, home: Path | None = None
               ) -> list[Offer]:
    """Every offer of one context, or of every known context, for the optimizer;
    ``kubernetes.prefer`` marks them preferred (they win over cheaper cloud offers)."""
    kube = config.kubernetes
    names = [context] if context else known_contexts(kube, home)
    offers = [o for name in names for o in context_offers(kube, name, home).offers]
    return [o._replace(preferred=True) for o in offers] if kube.prefer else offers


MAX_NOTES = 5  # lines of left-out nodes shown per context

# Said when planning finds no Kubernetes offer at all.
EMPTY_HINT = ("no Kubernetes context offers anything yet: read the clusters with "
              "`skyc check --refresh`, or describe their GPU pools in the config "
              "(kubernetes.contexts.<context>.pools)")


def _summary(offers: list[Offer]) -> str:
    parts = []
    for o in sorted(offers, key=lambda o: (o.accelerator is None, o.accelerator or "",
                                           o.accelerator_count)):
        what = f"{o.accelerator}:{o.accelerator_count:g}" if o.accelerator else "CPU"
        spot = " spot" if o.spot_price is not None else ""
        price = o.hourly(o.spot_price is not None)
        cost = f" ${price:g}/hr/node" if price else ""
        parts.append(f"{what} x{o.max_nodes}{spot}{cost}")
    return ", ".join(parts) or "nothing usable"


def describe(config: SkycConfig, env: Mapping[str, str], home: Path,
             cache_home: Path | None = None) -> list[str]:
    """One line per context (the kubeconfig's and the known ones): what it offers and
    where that came from, for ``skyc check``."""
    from skyc.compiler.kubernetes.credentials import credentials

    kube = config.kubernetes
    listed = {c.name for c in credentials(env, home).contexts}
    lines = []
    for name in sorted(listed | set(known_contexts(kube, cache_home))):
        found = context_offers(kube, name, cache_home)
        if found.source == "cluster":
            origin = f"read {found.read_at}"
        elif name in kube.contexts:
            origin = "from the config's pools"
        else:
            lines.append(f"kubernetes/{name}: never read (skyc check --refresh reads it)")
            continue
        lines.append(f"kubernetes/{name}: {_summary(found.offers)} ({origin})")
        shown = found.notes[:MAX_NOTES]
        lines += [f"  left out: {note}" for note in shown]
        if len(found.notes) > len(shown):
            lines.append(f"  left out: {len(found.notes) - len(shown)} more")
    return lines
