"""Which tools run on which architecture family: the matrix ``interp models --support``
prints and the "bring your own model" page shows.

Built from the family registry (:data:`interp.models.anatomy.FAMILIES`, the same one the
tests build a tiny checkpoint of each family from, so a family registered is a family
tested). Each column names the tests that check it on every family's tiny checkpoint;
every tool runs on every registered family, and an architecture no family describes is
refused in one line by :func:`interp.models.anatomy.anatomy`.
"""

from __future__ import annotations

from dataclasses import dataclass

from interp.models.anatomy import FAMILIES


@dataclass(frozen=True)
class Column:
    """One tool (or a few verbs that share their anatomy) of the matrix."""

    name: str
    verbs: str
    #: The tests that check the tool on every family's tiny checkpoint.
    evidence: tuple[str, ...]


def columns() -> list[Column]:
    """The matrix's columns, in the order the page shows them."""
    fam = "tests/unit/interp/test_families.py::"
    verbs = "tests/unit/interp/test_family_verbs.py::test_every_verb_runs_on_every_family"
    graphs = "tests/unit/saes/test_graphs.py::"
    return [
        Column("direct path", "every forward pass",
               (fam + "test_direct_path_equals_hugging_face",
                fam + "test_direct_path_equals_the_bridge")),
        Column("capture & generation", "capture, generate, attention, lens",
               (fam + "test_the_lens_last_layer_is_the_model", verbs)),
        Column("patching", "patch (exact, AtP, AtP*, DLA)",
               (fam + "test_attention_pattern_is_rebuilt_from_its_parts",
                fam + "test_patching_heads_with_every_method",
                fam + "test_dla_sums_to_the_logit_difference")),
        Column("edges", "causal edges", (fam + "test_edges_on_every_family",)),
        Column("probes & DAS", "probe, causal das", (verbs,)),
        Column("steering", "steer",
               (fam + "test_a_zero_steering_vector_changes_nothing_and_a_large_one_does",
                verbs)),
        Column("SAEs & transcoders", "sae train|eval|browse|explain|probe, transcoder train|eval",
               (fam + "test_sae_and_transcoder_training_run_and_resume", verbs)),
        Column("graph", "graph",
               (graphs + "test_replacement_is_exact_and_edges_sum_to_the_target",
                graphs + "test_constant_nodes_carry_the_model_biases", verbs)),
        Column("tuned lens", "tuned-lens train", (verbs,)),
        Column("evaluations", "eval sycophancy, eval constitutional", (verbs,)),
    ]


def matrix() -> list[dict[str, str]]:
    """One row per registered family: its name, model type, examples and every column
    (``works``: the column's tests pass on the family's tiny checkpoint)."""
    cols = columns()
    return [{"family": f.label, "model_type": f.model_type, "examples": f.examples,
             **{c.name: "works" for c in cols}}
            for f in sorted(FAMILIES.values(), key=lambda f: f.label.lower())]


__all__ = ["Column", "columns", "matrix"]
