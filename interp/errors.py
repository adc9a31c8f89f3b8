"""User-facing errors.

Anything a user can cause (bad path, unknown model, layer out of range, empty
prompt, mismatched artifact) raises :class:`InterpError` with a one-line
message. The CLI turns it into one line on stderr and exit code 2; the Python
API lets it propagate as an ordinary ``ValueError`` subclass.
"""

from __future__ import annotations


class InterpError(ValueError):
    """A problem with the user's input, reported as one clear line."""

    def __init__(self, message: str) -> None:
        # Keep the message to one line: the CLI prints it verbatim.
        super().__init__(" ".join(str(message).split("\n")).strip())
