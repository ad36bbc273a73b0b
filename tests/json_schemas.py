"""Check a command's JSON output against the schema of its result type."""

from __future__ import annotations


def validate(payload, result_type: str) -> None:
    """Raise ``jsonschema.ValidationError`` if `payload` does not follow `result_type`."""
    import jsonschema

    from bayesbias.schemas import schema

    jsonschema.validate(payload, schema(result_type))
