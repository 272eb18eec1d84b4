"""``skyc show-gpus``: what accelerators exist, in what counts, where, at what price."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from skyc.cli.options import one_infra

if TYPE_CHECKING:
    from skyc.catalog import Catalog, Offer

_NAME_HELP = "Accelerator, optionally with a count: H100, a100-80gb, A100:8."


def _split(name: str) -> tuple[str, float | None]:
    from skyc.errors import ConfigError

    head, sep, count = name.rpartition(":")
    if not sep:
        return name, None
    try:
        number = float(count)
    except ValueError:
        raise ConfigError(f"show-gpus {name}: the count after ':' must be a number",
                          hint="e.g. skyc show-gpus A100:8") from None
    if number <= 0 or number != number:
        raise ConfigError(f"show-gpus {name}: the count must be more than 0")
    return head, number


def _nearest(name: str, cat: Catalog) -> list[str]:
    from skyc.catalog.accelerators import nearest_names

    return nearest_names(name, set(cat.accelerator_names().values()))


def _summary_rows(offers: list[Offer], names: list[str]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for acc in names:
        mine = [o for o in offers if o.accelerator == acc]
        if not mine:
            continue
        counts = sorted({o.accelerator_count for o in mine})
        prices = [o.price / o.accelerator_count for o in mine
                  if o.price is not None and o.accelerator_count]
        rows.append((acc, ", ".join(f"{c:g}" for c in counts),
                     ", ".join(sorted({o.cloud for o in mine})),
                     f"{min(prices):.4f}" if prices else "-"))
    return rows


def _detail_rows(offers: list[Offer], all_regions: bool, cat: Catalog
                 ) -> list[tuple[str, ...]]:
    from skyc.catalog.suspicious import suspicious_offers

    odd = suspicious_offers(offers, cat.median_price)
    groups: dict[tuple[str, ...], list[Any]] = {}
    for o in offers:
        key: tuple[str, ...] = (o.accelerator or "", f"{o.accelerator_count:g}", o.cloud,
                                o.instance_type or "-", o.region if all_regions else "")
        groups.setdefault(key, []).append(o)
    rows: list[tuple[str, ...]] = []
    for key in sorted(groups, key=lambda k: (k[0].lower(), float(k[1]), *k[2:])):
        group = groups[key]
        normal = [o for o in group if o not in odd] or group
        prices = [o.price for o in normal if o.price is not None]
        spots = [o.spot_price for o in normal if o.spot_price is not None]
        first = group[0]
        where = key[4] if all_regions else str(len({o.region for o in group}))
        flag = " (suspicious price)" if all(o in odd for o in group) else ""
        rows.append((
            key[0], key[1], key[2], key[3],
            f"{first.accelerator_memory_gib:g}" if first.accelerator_memory_gib else "-",
            f"{first.vcpus:g}" if first.vcpus is not None else "-",
            (f"{min(prices):.4f}" if prices else "-") + flag,
            f"{min(spots):.4f}" if spots else "-", where,
        ))
    return rows


def show_gpus(
    name: str | None = typer.Argument(None, metavar="NAME[:COUNT]", help=_NAME_HELP),
    infra: list[str] = typer.Option([], "--infra", metavar="INFRA",
                                    help="Restrict to a cloud or cloud/region."),
    all_names: bool = typer.Option(False, "-a", "--all",
                                   help="Every accelerator, not only the common ones."),
    all_regions: bool = typer.Option(False, "--all-regions", help="One row per region."),
    catalog: Path | None = typer.Option(None, "--catalog", metavar="DIR",
                                        help="Catalog dir (<cloud>/vms.csv)."),
) -> None:
    """What accelerators exist, in what counts, where, at what price.

    Without NAME: a summary of common accelerators (-a: all of them). With NAME
    (optionally NAME:COUNT): one row per instance type; prices are $/hr/node.
    A price far below the same type's elsewhere is flagged as suspicious.
    """
    from skyc.apply.infra import catalog_for
    from skyc.catalog import OfferQuery
    from skyc.errors import InfeasibleError
    from skyc.optimizer import parse_infra
    from skyc.settings.config import load_config

    where = one_infra(infra)
    cloud, region, zone = parse_infra(where)
    cat = catalog_for(load_config(), infra=where, catalog_dir=catalog, every_cloud=True)
    acc, count = _accelerator(name, cat)
    query = OfferQuery(cloud=cloud, region=region, zone=zone, accelerator=acc,
                       accelerator_count=count, any_accelerator=acc is None)
    offers = [o for o in cat.offers(query) if o.accelerator]
    if not offers:
        raise InfeasibleError("no accelerators match" + (f" '{name}'" if name else "")
                              + (f" in {where}" if where else ""))
    if acc is None and not all_regions:
        _print_summary(offers, all_names)
    else:
        _print_details(offers, all_regions, cat)


def _accelerator(name: str | None, cat: Catalog) -> tuple[str | None, float | None]:
    """NAME[:COUNT] as the catalog names it, and the count; (None, None) without NAME."""
    from skyc.errors import InfeasibleError

    if name is None:
        return None, None
    base, count = _split(name)
    acc = cat.canonical_accelerator(base)
    if acc is None:
        near = _nearest(base, cat)
        raise InfeasibleError(
            f"no accelerator named '{base}' in the catalog",
            hint=(f"did you mean {', '.join(near)}? " if near else "")
            + "`skyc show-gpus -a` lists every accelerator")
    return acc, count


def _print_summary(offers: list[Offer], all_names: bool) -> None:
    """One row per accelerator (the common ones; -a: all of them)."""
    from skyc.catalog.accelerators import COMMON_ACCELERATORS
    from skyc.cli.output import fitted_table, print_table, print_text

    names = sorted({o.accelerator or "" for o in offers}, key=str.lower) if all_names \
        else [n for n in COMMON_ACCELERATORS]
    cols: tuple[str, ...] = ("accelerator", "counts", "clouds", "from $/hr per accelerator")
    print_table(fitted_table(None, cols, _summary_rows(offers, names),
                             right=("from $/hr per accelerator",)))
    more = "" if all_names else "; -a lists every accelerator"
    print_text(f"show one with: skyc show-gpus NAME[:COUNT]{more}")


def _print_details(offers: list[Offer], all_regions: bool, cat: Catalog) -> None:
    """One row per instance type (--all-regions: and region)."""
    from skyc.cli.output import fitted_table, print_table, print_text

    cols = ("accelerator", "count", "cloud", "instance", "GiB/acc", "vCPUs", "$/hr/node",
            "spot $/hr/node", "region" if all_regions else "regions")
    table = fitted_table(None, cols, _detail_rows(offers, all_regions, cat),
                         right=("$/hr/node", "spot $/hr/node"),
                         drop=("GiB/acc", "vCPUs", "regions", "spot $/hr/node"))
    print_table(table)
    shown = {str(c.header) for c in table.columns}
    # The footer explains only the columns the table kept at this width.
    print_text("prices: the lowest per row, USD per hour for one node"
               + ("; one row per region" if all_regions else
                  "; regions: how many offer it" if "regions" in shown else ""))


def register(app: typer.Typer) -> None:
    app.command("show-gpus")(show_gpus)
