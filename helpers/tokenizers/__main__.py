"""`python -m helpers.tokenizers`: list, fetch and export the tokenizers of the zoo (`helpers.tokenizers.zoo`)."""

from ..common.errors import run_cli
from .zoo import main

run_cli(main)
