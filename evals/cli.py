"""``interp eval …``: the alignment evaluations' command group.

Each evaluation defines its command in its own module and is added to
:data:`eval_group` below; :mod:`interp.cli` registers the group on ``interp``.
"""

from __future__ import annotations

import click


@click.group(name="eval")
def eval_group() -> None:
    """Alignment evaluations (sycophancy, constitutional AI)."""


from evals.cli_constitutional import constitutional  # noqa: E402

eval_group.add_command(constitutional)
from evals.cli_sycophancy import sycophancy  # noqa: E402

eval_group.add_command(sycophancy)
