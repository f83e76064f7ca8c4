"""The OpenAPI schema, described exactly: path parameters with their real patterns."""

from __future__ import annotations

from typing import Any

from common.rounds import NAME_PATTERN

# A regex route gives drf-spectacular only an unanchored pattern; the schema states exactly what each route accepts.
PATH_PARAMETER_SCHEMAS: dict[str, dict[str, Any]] = {
    "slug": {"type": "string", "pattern": r"^[-a-zA-Z0-9_]+$"},
    "round_name": {"type": "string", "pattern": rf"^({NAME_PATTERN})$"},
    "fmt": {"type": "string", "enum": ["csv", "jsonl"]},
    "table": {"type": "string", "pattern": r"^[a-z][a-z0-9_]{0,49}$"},
    "run_id": {"type": "integer", "minimum": 0},
}


def exact_path_parameters(result, generator, request, public):
    """drf-spectacular postprocessing hook."""
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            for parameter in operation.get("parameters", []) if isinstance(operation, dict) else []:
                if parameter.get("in") == "path" and parameter.get("name") in PATH_PARAMETER_SCHEMAS:
                    parameter["schema"] = dict(PATH_PARAMETER_SCHEMAS[parameter["name"]])
    return result
