"""Field types of a dataclass, read once: the one place the schema evaluates annotations."""

from __future__ import annotations

import typing
from typing import Any

_HINTS: dict[type, dict[str, Any]] = {}


class _Annotated:
    """A bare holder of one annotation, for ``typing.get_type_hints``."""

    def __init__(self, annotations: dict[str, Any]) -> None:
        self.__annotations__ = annotations


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
                    # one annotation at a time, so a name imported only for type checkers
                    # spoils only its own field
                    holder = _Annotated({name: ann})
                    try:
                        ann = typing.get_type_hints(holder, namespace, dict(vars(klass)),
                                                    include_extras=True)[name]
                    except Exception:  # noqa: BLE001 - TYPE_CHECKING-only names
                        ann = Any
                hints[name] = ann
        _HINTS[cls] = hints
    return hints


__all__ = ["type_hints"]
