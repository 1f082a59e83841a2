"""JSONL to Megatron `.bin/.idx` (`python -m helpers.preprocess`): the command, its workers, the input
cut into parts, the parts run locally or as Ray tasks, the outputs moved into place, and the summary."""

from ..common.lazy import lazy_names

_PUBLIC = {
    "preprocess": "helpers.preprocess.command",
    "output_prefix": "helpers.preprocess.command",
    "PreprocessSettings": "helpers.preprocess.settings",
}

__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_names(__name__, _PUBLIC)
