"""One SAE architecture is one registered class: :class:`Architecture`.

A subclass's **fields** are the architecture's training settings (its sparsity knob and
friends), each declared once with :func:`~interp.schema.settings.setting`: the type, default, help
text and check, and so the ``interp sae train`` option of the same name (or its ``flag``),
which the command line derives from the registry. Its **class variables** say what the
rest of the package knows the architecture by: its name (``--arch``, ``SAEConfig.
architecture``, the artifact's ``config.json``), the label figures and reports print, the
SAE class (:mod:`saes.sae`'s :class:`~saes.sae.SparseAutoencoder` or a subclass), and how it
maps to SAELens's folders (:mod:`saes.saelens`).

Adding an architecture is one module in this package::

    @register
    @dataclass(frozen=True)
    class GatedConfig(Architecture):
        label: ClassVar[str] = "Gated"
        summary: ClassVar[str] = "gated encoder + L1"
        sae_class: ClassVar[type[SparseAutoencoder]] = GatedSAE
        saelens: ClassVar[str] = "gated"

        l1_coefficient: float = setting(1.0, flag="--l1", check=positive, help="…")
        name: str = arch_name("gated")

:mod:`saes.architectures` imports every module of the package, so registering is all it
takes to appear in ``--arch``, in training, loading and SAELens export and import.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Self

from interp.errors import InterpError
from interp.schema import Config
from interp.schema.convert import from_data
from interp.schema.settings import SETTING, SettingInfo
from saes.registry import (
    ARCHITECTURES,
    architecture,
    register,
    saelens_architecture,
    unregister,
)
from saes.sae import SAEConfig, SparseAutoencoder, check_k


def arch_name(name: str) -> Any:
    """The ``name`` field of an architecture's settings: fixed (not a constructor
    argument), and kept in ``to_dict()`` so that a saved run says what it trained."""
    info = SettingInfo(help="The architecture's name (fixed).", cli=None)
    return dataclasses.field(default=name, init=False, metadata={SETTING: info})


@dataclass(frozen=True)
class Architecture(Config):
    """Base of every architecture's training settings (see the module doc).

    Subclasses declare their settings as fields and ``name = arch_name("…")`` last, set the
    class variables below, and are decorated with :func:`~saes.registry.register`.
    """

    #: Shown by figures and reports ("TopK (k 32)").
    label: ClassVar[str] = "?"
    #: One phrase for ``--arch``'s help ("ReLU + L1 penalty").
    summary: ClassVar[str] = ""
    #: The SAE this architecture trains and loads.
    sae_class: ClassVar[type[SparseAutoencoder]] = SparseAutoencoder
    #: Whether the SAE has ``k`` active latents per token (``SAEConfig.k`` is set from the
    #: settings' ``k`` and checked against ``d_sae``).
    uses_k: ClassVar[bool] = False
    #: SAELens 6's architecture name, written by :func:`saes.saelens.export_saelens`.
    saelens: ClassVar[str] = "standard"
    #: Whether a SAELens folder of ``saelens`` that interp did not write imports as this
    #: architecture (False for one exported as another's format, as BatchTopK is).
    saelens_import: ClassVar[bool] = True
    #: Tensors beyond the four weights that the SAELens folder carries (thresholds).
    saelens_tensors: ClassVar[tuple[str, ...]] = ()
    #: Position in the registry (and in ``--arch``'s list).
    order: ClassVar[int] = 100

    if TYPE_CHECKING:  # each subclass's last field (arch_name), not one of the base
        name: str

    # ------------------------------------------------------------------ training
    def coefficient(self) -> float:
        """The scheduled sparsity coefficient (λ of a penalty, warmed up by the trainer);
        0 when sparsity is the activation's (TopK)."""
        return 0.0

    def check_width(self, d_sae: int) -> None:
        """Rules that need the dictionary size (``k ≤ d_sae``); raise ``self.error``."""
        if self.uses_k:
            check_k(getattr(self, "k", None), d_sae, type(self).__name__)

    def knob_text(self) -> str:
        """``relu (λ 5.0)``, ``topk (k 32)``: the run's sparsity knob, for logs."""
        if self.uses_k:
            return f"{self.name} (k {getattr(self, 'k', None)})"
        return f"{self.name} (λ {self.coefficient()})"

    def sae_fields(self) -> dict[str, Any]:
        """The :class:`~saes.sae.SAEConfig` fields these settings fix."""
        out: dict[str, Any] = {"architecture": self.name}
        if self.uses_k:
            out["k"] = getattr(self, "k", None)
        return out

    # ------------------------------------------------------------------ SAEs
    @classmethod
    def check_sae(cls, cfg: SAEConfig) -> None:
        """Check an :class:`~saes.sae.SAEConfig` of this architecture (``k`` in range)."""
        if cls.uses_k:
            check_k(cfg.k, cfg.d_sae)

    @classmethod
    def text(cls, k: int | None = None) -> str:
        """``"TopK (k 32)"``, ``"ReLU"``: what figures and reports call an SAE."""
        return f"{cls.label} (k {k})" if k is not None else cls.label

    # ------------------------------------------------------------------ SAELens
    @classmethod
    def to_saelens(cls, cfg: SAEConfig) -> dict[str, Any]:
        """Top-level ``cfg.json`` entries the SAELens format of ``saelens`` needs beyond
        the shared ones (TopK's ``k``)."""
        return {}

    @classmethod
    def from_saelens(cls, cfg: Mapping[str, Any], ours: Mapping[str, Any],
                     d_sae: int) -> dict[str, Any]:
        """The :class:`~saes.sae.SAEConfig` fields beyond the widths, read from a SAELens
        ``cfg`` (top level, then ``metadata``) and our export's provenance entry ``ours``;
        raise :class:`InterpError` (one line, without the folder) when they are wrong."""
        return {}

    # ------------------------------------------------------------------ files
    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Settings saved as ``to_dict()`` (with their ``name``): the registered class of
        that name builds them; an unknown key is refused."""
        if not isinstance(data, Mapping):
            raise InterpError(f"SAE architecture settings must be an object, got {data!r}")
        name = str(data.get("name", "relu"))
        target = architecture(name)
        if not issubclass(target, cls):
            raise InterpError(f"{name} settings are not {cls.__name__}")
        known = {f.name for f in dataclasses.fields(target) if f.init}
        unknown = sorted(set(data) - known - {"name"})
        if unknown:
            raise InterpError(f"{name} settings have unknown keys: {', '.join(unknown)}")
        return from_data(target, data)  # type: ignore[return-value]


__all__ = ["ARCHITECTURES", "Architecture", "arch_name", "architecture", "register",
           "saelens_architecture", "unregister"]
