"""Loader code for the pretraining-data workshop: corpus, tokenizers, indexed datasets, packing."""

__version__ = "0.1.0"
