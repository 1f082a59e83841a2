"""`python -m helpers.audit`: audit saved batches (`helpers.audit.command`)."""

from ..common.errors import run_cli
from .command import main

run_cli(main)
