"""Field types of a dataclass, read once: the one place the schema evaluates annotations."""

from __future__ import annotations

from typing import Any

_HINTS: dict[type, dict[str, Any]] = {}


def type_hints(cls: type) -> dict[str, Any]:
    """A dataclass's field types, cached; an annotation that cannot be evaluated here (a
    name imported only for type checkers) reads as ``Any``."""
    hints = _HINTS.get(cls)
    if hints is None:
        import sys

        hints = {}
        for klass in reversed(cls.__mro__):
            module = sys.modules.get(klass.__module__)
            namespace = dict(vars(module)) if module else {}
            for name, ann in vars(klass).get("__annotations__", {}).items():
                if isinstance(ann, str):
                    try:
                        ann = eval(ann, namespace, dict(vars(klass)))  # noqa: S307
                    except Exception:  # noqa: BLE001 - TYPE_CHECKING-only names
                        ann = Any
                hints[name] = ann
        _HINTS[cls] = hints
    return hints


__all__ = ["type_hints"]
