"""The registry of SAE architectures: name -> :class:`~saes.architectures.base.Architecture`.

A leaf module, so that what needs to look an architecture up by name (an
:class:`~saes.sae.SAEConfig`'s check, a record's label) imports no architecture. Every
architecture registers itself when :mod:`saes.architectures` is imported, which importing
the :mod:`saes` package does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from interp.errors import InterpError

if TYPE_CHECKING:
    from saes.architectures.base import Architecture

A = TypeVar("A", bound="type[Architecture]")

#: Every registered architecture by name, in ``order`` (the ``--arch`` list's order).
ARCHITECTURES: dict[str, type[Architecture]] = {}


def register(cls: A) -> A:
    """Class decorator: add an :class:`Architecture` subclass to the registry."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"{cls.__name__} needs a name field: name: str = arch_name('…')")
    if name in ARCHITECTURES and ARCHITECTURES[name] is not cls:
        raise InterpError(f"SAE architecture {name!r} is registered already "
                          f"({ARCHITECTURES[name].__name__})")
    entries = {**ARCHITECTURES, name: cls}
    ARCHITECTURES.clear()
    ARCHITECTURES.update(sorted(entries.items(), key=lambda item: item[1].order))
    return cls


def unregister(name: str) -> None:
    """Take an architecture out of the registry (tests that register a toy one)."""
    ARCHITECTURES.pop(name, None)


def architecture(name: str) -> type[Architecture]:
    """The registered architecture called ``name``."""
    try:
        return ARCHITECTURES[name]
    except KeyError:
        raise InterpError(f"unknown SAE architecture {name!r}: use "
                          f"{', '.join(ARCHITECTURES)}") from None


def saelens_architecture(saelens: str, ours: Mapping[str, Any]) -> type[Architecture] | None:
    """The architecture a SAELens folder of architecture ``saelens`` imports as: the one our
    export recorded (``ours["architecture"]``) when it writes that format, else the one
    that reads it natively; None when none does."""
    mine = ARCHITECTURES.get(str(ours.get("architecture")))
    if mine is not None and mine.saelens == saelens:
        return mine
    return next((a for a in ARCHITECTURES.values()
                 if a.saelens == saelens and a.saelens_import), None)


__all__ = ["ARCHITECTURES", "architecture", "register", "saelens_architecture", "unregister"]
