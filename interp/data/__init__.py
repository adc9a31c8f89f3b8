"""Text data: prompt-set readers, the default training corpus, packed token windows."""

from __future__ import annotations

from interp.data.readers import open_text, read_prompts, read_records
from interp.data.windows import estimate_tokens, iter_windows, pack_windows, require_text

__all__ = ["estimate_tokens", "iter_windows", "open_text", "pack_windows", "read_prompts",
           "read_records", "require_text"]
