"""Alignment evaluations built on interp: sycophancy and constitutional AI.

Entry points (each takes a config (:class:`~interp.schema.settings.Config`), or its fields as
keywords, and returns a :class:`~interp.schema.result.Result` carrying its manifest, with
``to_dict()``, ``to_frame()``, ``headline()`` and a notebook view; figures in
:mod:`evals.figures`)::

    from evals import load_questions, run_sycophancy, SycophancyConfig
    result = run_sycophancy(model, load_questions(limit=100), SycophancyConfig(mode="cloze"))

    from evals import load_constitution, load_prompts, run_constitutional
    run = run_constitutional(model, load_prompts(limit=8), load_constitution(), rounds=1)

Modules: :mod:`evals.sycophancy` (prompts, grading, the run),
:mod:`evals.sycophancy_metrics` (rates from verdicts), :mod:`evals.constitution`
(constitution, prompts, chains, pairs), :mod:`evals.judge` (the AI judge and its bias
measures), :mod:`evals.constitutional` (critique–revision and the run),
:mod:`evals.scoring` (continuation log-probs), :mod:`evals.letters` (the
degenerate-letter check), :mod:`interp.stats.rates` (rates with intervals),
:mod:`evals.figures` (matplotlib figures).
"""

from __future__ import annotations

from evals.constitution import load_constitution, load_prompts
from evals.constitutional import ConstitutionalConfig, ConstitutionalResult, run_constitutional
from evals.sycophancy import SycophancyConfig, SycophancyResult, load_questions, run_sycophancy

__all__ = [
    "ConstitutionalConfig",
    "ConstitutionalResult",
    "SycophancyConfig",
    "SycophancyResult",
    "load_constitution",
    "load_prompts",
    "load_questions",
    "run_constitutional",
    "run_sycophancy",
]
