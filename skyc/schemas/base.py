"""What every document model shares, and the JSON Schema made from one."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

DRAFT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_BASE = "https://skyc.dev/schemas/"


class Document(BaseModel):
    """A part of a JSON document: no field beyond those declared."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


def document_schema(model: type[BaseModel], kind: str, title: str) -> dict[str, Any]:
    """``model``'s JSON Schema (draft 2020-12) as the document of ``kind``: its
    ``$schema``, ``$id`` and ``title`` first, the model's definitions after."""
    schema = model.model_json_schema(mode="serialization")
    schema.pop("title", None)
    return {"$schema": DRAFT, "$id": f"{SCHEMA_BASE}{kind}.json", "title": title, **schema}
