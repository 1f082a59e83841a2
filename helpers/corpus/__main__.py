"""`python -m helpers.corpus`: build the default real corpus (`helpers.corpus.build`)."""

from ..common.errors import run_cli
from .build import main

run_cli(main)
