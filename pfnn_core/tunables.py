"""Live tunables as dataclass fields, shared by every settings object (the runtime's, the physics
layer's): `tunable` declares a field with what a panel needs to show it (label, help, range, slider step,
choices), `value_from_text` reads a value for one from a command line (`--set NAME=VALUE`)."""
from __future__ import annotations

import dataclasses
from typing import Any

TRUE_WORDS, FALSE_WORDS = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def tunable(default: Any, label: str, help: str, min: float | None = None, max: float | None = None,
            step: float | None = None, choices: tuple[str, ...] | None = None) -> Any:
    metadata = {"label": label, "help": help}
    for key, value in (("min", min), ("max", max), ("step", step), ("choices", choices)):
        if value is not None:
            metadata[key] = value
    return dataclasses.field(default=default, metadata=metadata)


def value_from_text(field: dataclasses.Field, text: str):
    """The value `text` stands for in a field of the kind its default is (bool, one of its choices, int,
    float); ValueError naming the field and what it expected."""
    name, default, text = field.name, field.default, text.strip()
    if isinstance(default, bool):
        if text.lower() not in TRUE_WORDS + FALSE_WORDS:
            raise ValueError(f"{name}: expected true or false, got {text!r}")
        return text.lower() in TRUE_WORDS
    if "choices" in field.metadata:
        if text not in field.metadata["choices"]:
            raise ValueError(f"{name}: expected one of {', '.join(field.metadata['choices'])}, got {text!r}")
        return text
    try:
        return int(text) if isinstance(default, int) else float(text)
    except ValueError:
        kind = "an integer" if isinstance(default, int) else "a number"
        raise ValueError(f"{name}: expected {kind}, got {text!r}") from None
