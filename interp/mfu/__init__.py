"""Model FLOPs utilisation: FLOPs counted from the model's shape, over a measured peak.

:mod:`~interp.mfu.flops` counts the matmul FLOPs a run performs (a forward pass, an SAE
step, a tuned-lens step); :mod:`~interp.mfu.peak` measures this machine's peak with a
matmul microbenchmark (``interp peak``, cached) or reads it from a table of known GPUs;
:func:`~interp.mfu.flops.mfu` divides one by the other. The trainers report
``tokens_per_s``, ``mfu`` and ``peak_flops`` in their progress bars and results.
"""

from interp.mfu.flops import (
    ModelShape,
    Work,
    forward_flops,
    mfu,
    sae_step_flops,
    tuned_lens_step_flops,
)
from interp.mfu.peak import KNOWN_GPUS, PeakResult, device_peak, measure_peak

__all__ = ["KNOWN_GPUS", "ModelShape", "PeakResult", "Work", "device_peak", "forward_flops",
           "measure_peak", "mfu", "sae_step_flops", "tuned_lens_step_flops"]
