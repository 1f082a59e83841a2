"""Loader code for the pretraining-data workshop, laid out as the pipeline the notebooks teach:

    corpus/ -> tokenizers/ -> preprocess/ -> datasets/ -> loading/ -> training/
    (text)     (token ids)    (.bin/.idx)    (samples,     (packed     (model)
                                              blends)       batches)

beside `clean/` (deduplication before tokenizing), `check/` (is a `.bin/.idx` sound), `engines/` (where a
step's jobs run), `common/` (what every step shares), and `workshop/`, `runs/`, `kernel` (what the
notebooks draw, and running them headless). A package only imports from packages below it.

The names most programs need are here; each is imported on first use, so `import helpers` stays cheap
and a command line loads only what it runs.
"""

from __future__ import annotations

from .common.lazy import lazy_names

__version__ = "0.1.0"

# name -> the module that defines it; `preprocess` and `clean` are the subpackages' own
# (`from helpers.preprocess import preprocess`), since `helpers.preprocess` is the package.
_PUBLIC = {
    "UserError": "helpers.common.errors",
    "DataNotFoundError": "helpers.common.errors",
    "corpus_paths": "helpers.corpus.build",
    "read_jsonl": "helpers.corpus.jsonl",
    "load_tokenizer": "helpers.tokenizers.zoo",
    "optimal_dtype": "helpers.tokenizers.token_dtype",
    "check_dataset": "helpers.check.command",
    "IndexedDataset": "helpers.datasets.indexed",
    "IndexedWriter": "helpers.datasets.indexed",
    "GPTDataset": "helpers.datasets.gpt_dataset",
    "GPTDatasetConfig": "helpers.datasets.gpt_dataset",
    "build_datasets": "helpers.datasets.blending",
    "pack": "helpers.loading.packing",
    "make_dataloader": "helpers.loading.loader",
    "LoaderSettings": "helpers.loading.settings",
    "train": "helpers.training.train",
}

__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_names(__name__, _PUBLIC)
