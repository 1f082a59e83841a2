"""Text to token ids: the tokenizer zoo (`python -m helpers.tokenizers list`), what a tokenizer costs a
model, its SentencePiece export, and the token dtype a vocabulary needs on disk."""
