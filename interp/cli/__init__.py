"""The ``interp`` command line: the only place where the packages are composed.

One module per verb group (``lens``, ``capture``, ``probe``, ``generate``, ``steer``,
``tuned-lens``, ``sae``, ``eval``, and the data verbs); each verb parses its options
into a config, makes one library call, and writes results and a report.
:mod:`interp.cli.app` holds the root group and registers every verb.
"""

from __future__ import annotations

from interp.cli.app import cli, main

__all__ = ["cli", "main"]
