"""The SAE family behind one registry: ReLU + L1, TopK, BatchTopK, JumpReLU.

Each architecture is a training-settings dataclass (its sparsity knob) and an SAE class
(its activation and loss), both named by ``name``::

    from saes import TrainConfig, train_sae
    from saes.architectures import TopKConfig
    run = train_sae(model, docs, "runs/topk", TrainConfig(arch=TopKConfig(k=32)))

:func:`arch_config` builds the settings from a name and options (the CLI's
``--arch``/``--k``/``--l1``/``--l0-coefficient``), :func:`arch_config_from_dict` reads
them back from a saved ``config.json``, and :func:`sae_class` gives the SAE class that
:func:`saes.loading.load_sae` builds for an artifact's ``architecture``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from interp.errors import InterpError
from saes.architectures.jumprelu import JumpReLUConfig, JumpReLUSAE
from saes.architectures.relu import ReLUConfig
from saes.architectures.topk import BatchTopKConfig, BatchTopKSAE, TopKConfig, TopKSAE
from saes.sae import ARCHITECTURE_NAMES, SparseAutoencoder

ArchConfig = ReLUConfig | TopKConfig | BatchTopKConfig | JumpReLUConfig

#: name -> (training settings, SAE class)
ARCHITECTURES: dict[str, tuple[type, type[SparseAutoencoder]]] = {
    "relu": (ReLUConfig, SparseAutoencoder),
    "topk": (TopKConfig, TopKSAE),
    "batchtopk": (BatchTopKConfig, BatchTopKSAE),
    "jumprelu": (JumpReLUConfig, JumpReLUSAE),
}
assert tuple(ARCHITECTURES) == ARCHITECTURE_NAMES

__all__ = [
    "ARCHITECTURES",
    "ArchConfig",
    "BatchTopKConfig",
    "BatchTopKSAE",
    "JumpReLUConfig",
    "JumpReLUSAE",
    "ReLUConfig",
    "TopKConfig",
    "TopKSAE",
    "arch_config",
    "arch_config_from_dict",
    "sae_class",
]


def _entry(name: str) -> tuple[type, type[SparseAutoencoder]]:
    if name not in ARCHITECTURES:
        raise InterpError(f"unknown SAE architecture {name!r}: use "
                          f"{', '.join(ARCHITECTURES)}")
    return ARCHITECTURES[name]


def sae_class(name: str) -> type[SparseAutoencoder]:
    """The SAE class of architecture ``name``."""
    return _entry(name)[1]


def arch_config(name: str, **options: Any) -> ArchConfig:
    """Training settings of ``name`` from the options it knows (``None`` values and the
    options of other architectures are ignored: the CLI passes all of them)."""
    cls = _entry(name)[0]
    known = {f.name for f in fields(cls) if f.init}
    return cls(**{k: v for k, v in options.items() if k in known and v is not None})


def arch_config_from_dict(d: Mapping[str, Any]) -> ArchConfig:
    """The settings saved as ``asdict(config)`` (with their ``name``)."""
    name = str(d.get("name", "relu"))
    cls = _entry(name)[0]
    known = {f.name for f in fields(cls) if f.init}
    unknown = sorted(set(d) - known - {"name"})
    if unknown:
        raise InterpError(f"{name} settings have unknown keys: {', '.join(unknown)}")
    return cls(**{k: v for k, v in d.items() if k in known})
