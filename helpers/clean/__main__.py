"""`python -m helpers.clean`: clean and deduplicate JSONL before tokenizing (`helpers.clean.command`)."""

from ..common.errors import run_cli
from .command import main

run_cli(main)
