"""Command lines that refuse a wrong flag as they refuse any other bad input: one line naming what is wrong
and the fix, exit code 2, no usage block to read through."""

from __future__ import annotations

import argparse
import sys


class CommandParser(argparse.ArgumentParser):
    """`argparse.ArgumentParser` whose errors are one `error: ...; fix: ...` line (its subcommands too)."""

    def error(self, message: str):
        sys.stderr.write(f"error: {self.prog}: {message}; fix: run {self.prog} --help for the flags and "
                         "their values\n")
        sys.exit(2)
