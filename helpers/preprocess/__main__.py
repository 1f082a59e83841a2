"""`python -m helpers.preprocess`: tokenize JSONL into Megatron .bin/.idx (`helpers.preprocess.command`).
The fast encoder's vocabulary starts loading first, where an earlier run left a note for this tokenizer
(`helpers.tokenizers.early_vocabulary`), so that it reads beside the imports."""

import sys

from ..tokenizers.early_vocabulary import start

start(sys.argv[1:])

from ..common.errors import run_cli  # noqa: E402  (after the early start, on purpose)
from .command import main  # noqa: E402

run_cli(main)
