"""`python -m helpers.check`: check a .bin/.idx pair against its sidecar and tokenizer (`helpers.check.command`)."""

from ..common.errors import run_cli
from .command import main

run_cli(main)
