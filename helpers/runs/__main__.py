"""`python -m helpers.runs`: run notebooks headless over a grid of parameters (`helpers.runs.command`)."""

from ..common.errors import run_cli
from .command import main

run_cli(main)
