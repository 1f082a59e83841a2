"""`python -m helpers.training` (or under `torchrun`): training steps on real data (`helpers.training.command`)."""

from ..common.errors import run_cli
from .command import main

run_cli(main)
