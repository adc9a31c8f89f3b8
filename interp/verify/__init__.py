"""Model verification: does ``interp`` read this model correctly?

:func:`~interp.verify.checks.verify_model` runs the checks of the README's
verified-models table on any loadable model (``interp models --verify NAME``):
the last layer's lens equals the model's logits, the hooked logits equal the plain
Hugging Face model's, capture is batch invariant, the BOS convention is the
tokenizer's, and batched greedy generation equals one prompt at a time.
"""

from interp.verify.checks import verify_model
from interp.verify.results import Check, VerifyConfig, VerifyResult

__all__ = ["Check", "VerifyConfig", "VerifyResult", "verify_model"]
