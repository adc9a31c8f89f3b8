"""Sparse autoencoders trained on interp activations (trainer, metrics, feature browser).

The package is laid out by the foundation; its contents land with the SAE issue.
"""
