"""The SAE family behind one registry: ReLU + L1, TopK, BatchTopK, JumpReLU.

Each architecture is one registered class (:class:`~saes.architectures.base.Architecture`):
its training settings are the fields (each an ``interp sae train`` option), and its class
variables name its SAE class, its label and its SAELens format::

    from saes import SAETrainConfig, train_sae
    from saes.architectures import TopKConfig
    run = train_sae(model, docs, "runs/topk", SAETrainConfig(arch=TopKConfig(k=32)))

Every module of this package is imported here, so an architecture registers by being a
module of it (:func:`~saes.registry.register`). :func:`arch_config` builds the
settings from a name and options, :func:`arch_config_from_dict` reads them back from a
saved ``config.json``, and :func:`sae_class` gives the SAE class that
:func:`saes.loading.load_sae` builds for an artifact's ``architecture``.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Mapping
from typing import Any

from saes.architectures.base import (
    ARCHITECTURES,
    Architecture,
    arch_name,
    architecture,
    register,
    saelens_architecture,
    unregister,
)
from saes.architectures.jumprelu import JumpReLUConfig, JumpReLUSAE
from saes.architectures.relu import ReLUConfig
from saes.architectures.topk import BatchTopKConfig, BatchTopKSAE, TopKConfig, TopKSAE
from saes.sae import SparseAutoencoder

for _module in pkgutil.iter_modules(__path__):  # every architecture module registers itself
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = [
    "ARCHITECTURES",
    "Architecture",
    "BatchTopKConfig",
    "BatchTopKSAE",
    "JumpReLUConfig",
    "JumpReLUSAE",
    "ReLUConfig",
    "TopKConfig",
    "TopKSAE",
    "arch_config",
    "arch_config_from_dict",
    "arch_name",
    "architecture",
    "register",
    "sae_class",
    "saelens_architecture",
    "unregister",
]


def sae_class(name: str) -> type[SparseAutoencoder]:
    """The SAE class of architecture ``name``."""
    return architecture(name).sae_class


def arch_config(name: str, **options: Any) -> Architecture:
    """Training settings of ``name`` from the options it knows (``None`` values and the
    options of other architectures are ignored)."""
    cls = architecture(name)
    known = {f.name for f in dataclasses.fields(cls) if f.init}
    return cls(**{k: v for k, v in options.items() if k in known and v is not None})


def arch_config_from_dict(d: Mapping[str, Any]) -> Architecture:
    """The settings saved as ``to_dict()`` (with their ``name``)."""
    return Architecture.from_dict(d)
