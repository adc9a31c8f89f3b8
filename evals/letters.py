"""The degenerate-letter check: is a model's letter answer to a two-option question real?

Small models asked "A or B?" often answer with one letter whatever the options say
(SmolLM2-135M answers "B" about 90% of the time). Accuracy then sits at 0.5 and looks
like weak knowledge, when it is no reading of knowledge at all. The check shows every
item in both option orders and looks at the letters' next-token log-probabilities:

* ``logprobs_fwd[i, j]``: log-prob of letter ``j`` when item ``i``'s two contents are
  shown in order (x, y), i.e. letter 0 names x;
* ``logprobs_rev[i, j]``: the same with order (y, x), i.e. letter 0 names y;
* ``correct[i]`` (optional): the content index of the right answer (0 = x, 1 = y).

The verdict in each order is the letter with the higher log-prob (ties: letter 0).

Criteria (each failed one adds a plain sentence to ``reasons``; valid = none failed):

* **letter bias**: one letter takes more than ``MAX_LETTER_SHARE`` (80%) of all verdicts
  in both orders. An unbiased reader of content gives each letter 50% here, because
  every item is shown once in each order.
* **order consistency**: fewer than ``MIN_ORDER_CONSISTENCY`` (60%) of items get the
  same *content* in both orders. Guessing gives 50%; always one letter gives 0%.
* **letter mass**: the letters hold on average less than ``MIN_LETTER_MASS`` (0.5) of
  the next-token probability, so the model mostly wants to say something else and the
  comparison between letters reads noise.
* with ``correct``: **order gap**: accuracy in one order differs from the other by more
  than ``MAX_ORDER_GAP`` (0.2); and **both orders**: fewer than ``MIN_BOTH_RIGHT_SHARE``
  (half) of the items right in at least one order are right in both.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import torch
from jaxtyping import Float
from torch import Tensor

from interp.errors import InterpError
from interp.schema import Result

#: One letter may take at most this share of all verdicts (both orders).
MAX_LETTER_SHARE = 0.8
#: At least this share of items must get the same content in both orders.
MIN_ORDER_CONSISTENCY = 0.6
#: The letters must hold at least this mean next-token probability mass.
MIN_LETTER_MASS = 0.5
#: Accuracy may differ between the two orders by at most this much.
MAX_ORDER_GAP = 0.2
#: Of the items right in at least one order, at least this share must be right in both.
MIN_BOTH_RIGHT_SHARE = 0.5

__all__ = [
    "LetterCheck",
    "check_letters",
    "MAX_LETTER_SHARE",
    "MIN_ORDER_CONSISTENCY",
    "MIN_LETTER_MASS",
    "MAX_ORDER_GAP",
    "MIN_BOTH_RIGHT_SHARE",
]


@dataclass
class LetterCheck(Result):
    """Whether letter answers carry content, and the numbers behind the verdict.

    ``to_dict()`` is its fields, JSON-ready (NaN for undefined shares); it sits inside a
    run's ``results.json`` (no ``warnings`` key while there are none).
    """

    warnings_always: ClassVar[bool] = False

    valid: bool
    reasons: list[str]
    n: int
    letter_share: dict[str, float]
    order_consistency: float
    letter_mass: float
    accuracy_by_order: dict[str, float] | None = None
    both_orders_right: float | None = None
    accuracy: float | None = None


def check_letters(
    logprobs_fwd: Float[Tensor, "n 2"],
    logprobs_rev: Float[Tensor, "n 2"],
    *,
    letters: Sequence[str] = ("A", "B"),
    correct: Sequence[int] | None = None,
) -> LetterCheck:
    """Run the degenerate-letter check (see the module docstring for the criteria).

    Args:
        logprobs_fwd: ``[n, 2]`` next-token log-probs of the two letters, order (x, y).
        logprobs_rev: ``[n, 2]`` the same, order (y, x).
        letters: the two letters' names (for ``letter_share`` and the reasons).
        correct: optional ``n`` content indices (0 = x, 1 = y) of the right answers.

    Returns:
        :class:`LetterCheck`; ``valid`` is False when any criterion fails (and always for
        ``n = 0``).
    """
    fwd = torch.as_tensor(logprobs_fwd, dtype=torch.float64)
    rev = torch.as_tensor(logprobs_rev, dtype=torch.float64)
    if fwd.ndim != 2 or fwd.shape[1] != 2 or fwd.shape != rev.shape:
        raise InterpError(
            f"letter log-probs must both be [n, 2]; got {list(fwd.shape)} and {list(rev.shape)}"
        )
    if len(letters) != 2:
        raise InterpError(f"the letter check takes two letters, got {len(letters)}")
    n = int(fwd.shape[0])
    if correct is not None and len(correct) != n:
        raise InterpError(f"{len(correct)} correct answers for {n} items")
    names = [str(x) for x in letters]
    if n == 0:
        nan = math.nan
        return LetterCheck(
            valid=False, reasons=["There are no items to check."], n=0,
            letter_share={x: nan for x in names}, order_consistency=nan, letter_mass=nan,
            accuracy_by_order=None if correct is None else {"forward": nan, "reverse": nan},
            both_orders_right=None if correct is None else nan,
        )
    pick_f = (fwd[:, 1] > fwd[:, 0]).long()  # letter index chosen, order (x, y)
    pick_r = (rev[:, 1] > rev[:, 0]).long()  # letter index chosen, order (y, x)
    content_f = pick_f  # letter j names content j
    content_r = 1 - pick_r  # letter j names content 1 - j
    picks = torch.cat([pick_f, pick_r])
    share = {names[j]: float((picks == j).double().mean()) for j in range(2)}
    consistency = float((content_f == content_r).double().mean())
    mass = float(torch.cat([fwd.exp().sum(1), rev.exp().sum(1)]).mean())
    reasons: list[str] = []
    top = max(share, key=lambda k: share[k])
    if share[top] > MAX_LETTER_SHARE:
        reasons.append(
            f"The model answers {top!r} in {share[top]:.0%} of verdicts although each "
            f"letter is right half the time (limit {MAX_LETTER_SHARE:.0%})."
        )
    if consistency < MIN_ORDER_CONSISTENCY:
        reasons.append(
            f"Only {consistency:.0%} of items get the same answer in both option orders "
            f"(guessing gives 50%; needed {MIN_ORDER_CONSISTENCY:.0%})."
        )
    if mass < MIN_LETTER_MASS:
        reasons.append(
            f"The letters hold only {mass:.2f} of the next-token probability on average "
            f"(needed {MIN_LETTER_MASS}), so the model mostly wants to say something else."
        )
    acc_by_order = both = acc = None
    if correct is not None:
        y = torch.as_tensor(list(correct), dtype=torch.long)
        if bool(((y != 0) & (y != 1)).any()):
            raise InterpError("correct answers must be content indices 0 or 1")
        right_f, right_r = content_f == y, content_r == y
        acc_by_order = {"forward": float(right_f.double().mean()),
                        "reverse": float(right_r.double().mean())}
        acc = float(torch.cat([right_f, right_r]).double().mean())
        both = float((right_f & right_r).double().mean())
        gap = abs(acc_by_order["forward"] - acc_by_order["reverse"])
        if gap > MAX_ORDER_GAP:
            reasons.append(
                f"Accuracy depends on the option order: {acc_by_order['forward']:.2f} in one "
                f"and {acc_by_order['reverse']:.2f} in the other (gap limit {MAX_ORDER_GAP})."
            )
        either = float((right_f | right_r).double().mean())
        if either > 0 and both / either < MIN_BOTH_RIGHT_SHARE:
            reasons.append(
                f"Only {both:.0%} of items are right in both orders, against "
                f"{either:.0%} right in at least one: right answers are mostly letter luck."
            )
    return LetterCheck(
        valid=not reasons, reasons=reasons, n=n, letter_share=share,
        order_consistency=consistency, letter_mass=mass, accuracy_by_order=acc_by_order,
        both_orders_right=both, accuracy=acc,
    )
