"""`python -m helpers.runs`: run notebooks headless over a grid of parameters, or (`fit-mix`) fit a mixing law to
a swarm of such runs (`helpers.runs.command`)."""

from ..common.errors import run_cli
from .command import main

run_cli(main)
