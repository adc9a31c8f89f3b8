"""What the tests share besides fixtures: paths, and the helper modules beside this one.

* :mod:`tests.support.cli_runner`: run the ``interp`` CLI in-process.
* :mod:`tests.support.browser`: open a report in headless Chromium.
* :mod:`tests.support.html_checks`: parse a report's HTML, its SVGs and sections.
* :mod:`tests.support.kill_resume`: SIGKILL a training command and check each resume.
* :mod:`tests.support.holders`: wait for a process holding a lock or folder; release it.
* :mod:`tests.support.bad_inputs`: the bad-input case type, shared builders, and the
  collector of every tool's ``BAD_INPUTS``.
* :mod:`tests.support.text_fixtures`: synthetic paragraphs for training-loop tests.
* ``fixtures/``: data files (tiny corpus sources).
"""

from __future__ import annotations

from pathlib import Path

#: The repository's root folder.
ROOT = Path(__file__).resolve().parents[2]
#: Data files used by the tests.
FIXTURE_DIR = Path(__file__).resolve().parent / "fixtures"
