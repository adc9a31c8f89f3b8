"""Alignment evaluations (sycophancy, constitutional AI) built on interp.

The package is laid out by the foundation; its contents land with the evals issues.
"""
