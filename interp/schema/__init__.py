"""The shape every tool shares: settings declared once (:mod:`interp.schema.settings`), one
result base (:mod:`interp.schema.result`) and one converter to and from JSON
(:mod:`interp.schema.convert`).

Plumbing only: no tool imports another through here, and nothing here knows a tool.
"""

from interp.schema.convert import from_data, json_field, json_meta, json_safe, to_data
from interp.schema.result import Headline, Result
from interp.schema.settings import (
    SEED_MAX,
    Check,
    Cli,
    Config,
    ConfigError,
    at_least,
    at_most,
    each,
    finite,
    fraction,
    in_range,
    non_negative,
    not_empty,
    one_of,
    positive,
    seed_range,
    setting,
)

__all__ = [
    "Check", "Cli", "Config", "ConfigError", "Headline", "Result", "at_least", "at_most", "each",
    "finite", "fraction", "from_data", "in_range", "json_field", "json_meta", "json_safe",
    "non_negative", "not_empty", "one_of", "positive", "SEED_MAX", "seed_range", "setting",
    "to_data",
]
