"""Which tools run on which architecture family: the matrix ``interp models --support``
prints and the "bring your own model" page shows.

Built from the family registry (:data:`interp.models.anatomy.FAMILIES`, the same one the
tests build a tiny checkpoint of each family from) and each tool's own refusal rule, so
the matrix cannot claim a cell the tool would refuse. Each column names the tests that
check it on every family's tiny checkpoint. It lives with the command line, the
composition root, because one column's rule (the attribution graph's) belongs to
:mod:`saes`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from interp.models.anatomy import FAMILIES, Family


@dataclass(frozen=True)
class Column:
    """One tool (or a few verbs that share their anatomy) of the matrix."""

    name: str
    verbs: str
    #: Why the tool refuses a family (None: it runs on it), or None when it runs on all.
    refusal: Callable[[Family], str | None] | None
    #: The tests that check the tool on every family's tiny checkpoint.
    evidence: tuple[str, ...]


def columns() -> list[Column]:
    """The matrix's columns, in the order the page shows them."""
    fam = "tests/unit/interp/test_families.py::"
    return [
        Column("direct path", "every forward pass", None,
               (fam + "test_direct_path_equals_hugging_face",
                fam + "test_direct_path_equals_the_bridge")),
        Column("lens", "lens", None, (fam + "test_the_lens_last_layer_is_the_model",)),
        Column("patching", "patch (exact, AtP, AtP*, DLA)", None,
               (fam + "test_attention_pattern_is_rebuilt_from_its_parts",
                fam + "test_patching_heads_with_every_method",
                fam + "test_dla_sums_to_the_logit_difference")),
        Column("edges", "causal edges", None, (fam + "test_edges_on_every_family",)),
        Column("graph", "graph", None,
               ("tests/unit/saes/test_graphs.py::"
                "test_replacement_is_exact_and_edges_sum_to_the_target",
                "tests/unit/saes/test_graphs.py::test_constant_nodes_carry_the_model_biases")),
        Column("steering", "steer", None,
               (fam + "test_a_zero_steering_vector_changes_nothing_and_a_large_one_does",)),
        Column("training", "sae train, transcoder train", None,
               (fam + "test_sae_and_transcoder_training_run_and_resume",)),
    ]


def cell(column: Column, family: Family) -> str:
    """``works`` or ``refused: why``."""
    why = column.refusal(family) if column.refusal is not None else None
    return "works" if why is None else f"refused: {why}"


def matrix() -> list[dict[str, str]]:
    """One row per registered family: its name, model type, examples and every column."""
    cols = columns()
    return [{"family": f.label, "model_type": f.model_type, "examples": f.examples,
             **{c.name: cell(c, f) for c in cols}}
            for f in sorted(FAMILIES.values(), key=lambda f: f.label.lower())]


__all__ = ["Column", "cell", "columns", "matrix"]
