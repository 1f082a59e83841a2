"""`python -m helpers.preprocess`: tokenize JSONL into Megatron .bin/.idx (`helpers.preprocess.command`)."""

from ..common.errors import run_cli
from .command import main

run_cli(main)
