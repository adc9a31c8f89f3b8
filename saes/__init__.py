"""Sparse autoencoders trained on interp activations: trainer, metrics, feature browser.

The entry points, each a config in and a typed result out::

    from saes import SAETrainConfig, train_sae, load_sae, SAEEvalConfig, evaluate_sae
    run = train_sae(model, docs, "runs/l6", SAETrainConfig(layer=6))       # SAETrainResult
    sae = load_sae(run.sae_path, model).sae
    result = evaluate_sae(model, sae, heldout, SAEEvalConfig(tokens=8192)) # SAEEvalResult
    result.to_dict()      # results.json of `interp sae eval`
    result.to_frame()     # one row per metric
    data = collect_browser_data(model, sae, heldout, BrowserConfig(features="alive:20"))

Figures of every result are in :mod:`saes.figures`; SAELens folders are read and written
by :func:`~saes.saelens.import_saelens` and :func:`~saes.saelens.export_saelens`.
"""

from saes.features.browser import BrowserConfig, BrowserData, collect_browser_data
from saes.loading import LoadedSAE, load_sae
from saes.metrics import SAEEvalConfig, SAEEvalResult, evaluate_sae
from saes.results import TrainingRecord
from saes.sae import SAEConfig, SparseAutoencoder
from saes.saelens import export_saelens, import_saelens
from saes.train import SAETrainConfig, SAETrainResult, train_sae

__all__ = [
    "BrowserConfig",
    "BrowserData",
    "LoadedSAE",
    "SAEConfig",
    "SAEEvalConfig",
    "SAEEvalResult",
    "SAETrainConfig",
    "SAETrainResult",
    "SparseAutoencoder",
    "TrainingRecord",
    "collect_browser_data",
    "evaluate_sae",
    "export_saelens",
    "import_saelens",
    "load_sae",
    "train_sae",
]
