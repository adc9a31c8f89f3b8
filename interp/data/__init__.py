"""Text data: prompt-set readers, the default training corpus, packed token windows."""

from __future__ import annotations

from interp.data.readers import open_text, read_prompts, read_records
from interp.data.windows import iter_windows, pack_windows

__all__ = ["iter_windows", "open_text", "pack_windows", "read_prompts", "read_records"]
