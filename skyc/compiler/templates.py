"""Render the jinja2 templates in ``skyc/templates/``."""

from __future__ import annotations

import shlex
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def _env() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("skyc", "templates"),
        autoescape=False,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["quote"] = lambda value: shlex.quote(str(value))
    return env


def render(name: str, **context: Any) -> str:
    text: str = _env().get_template(name).render(**context)
    return text
