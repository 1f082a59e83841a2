"""The flags that audit a run's batches and plant a data bug into them, the same in `python -m helpers.training`
and every framework example: `--audit` checks each batch before its step (`helpers.audit`) and stops the run
at the first finding; `--plant-bug NAME` does one of the silent bugs to the real batches, as a broken script
would, and says so on stderr, so that a learner sees the audit name it (`helpers.audit.planting`).
"""

from __future__ import annotations

import argparse

from ..audit.live import Audited, Auditor
from ..audit.planting import BUGS, SETUP_BUGS, PlantedBatches, Planter, planted_notice
from ..audit.settings import AuditSettings
from ..common.errors import say_on_stderr

__all__ = ["add_audit_flag", "batches_for_the_model", "planter_if_asked"]


def add_audit_flag(parser: argparse.ArgumentParser) -> None:
    """`--audit` and `--plant-bug NAME`, with the same meaning in every command that trains."""
    parser.add_argument("--audit", action="store_true",
                        help="audit every batch before its step (helpers.audit); stop at the first finding")
    parser.add_argument("--plant-bug", choices=list(BUGS), default=None, metavar="NAME",
                        help=f"do this data bug to the real batches, as a broken script would (said on stderr): "
                             f"{', '.join(BUGS)}")


def planter_if_asked(args: argparse.Namespace, data_vocab_size: int) -> Planter | None:
    """The `Planter` of `--plant-bug` for a bug of the stream (None without one, or for a bug of the set-up,
    which the loader's rank and the model's vocabulary carry), once stderr has said that a bug is planted."""
    bug = getattr(args, "plant_bug", None)
    if bug is None:
        return None
    say_on_stderr(planted_notice(bug))
    return None if bug in SETUP_BUGS else Planter(bug, vocab_size=data_vocab_size)


def batches_for_the_model(args: argparse.Namespace, loader, vocab_size: int):
    """The loader as the training loop takes it: `--plant-bug`'s bug done to its batches, and under `--audit`
    each batch audited on its way to a model of `vocab_size` ids (labels one token on, as the loader gives
    them; under torch.distributed the ranks compare their batches at every step)."""
    planter = planter_if_asked(args, getattr(loader.source, "vocab_size", None) or vocab_size)
    batches = loader if planter is None else PlantedBatches(loader, planter)
    if not getattr(args, "audit", False):
        return batches
    return Audited(batches, Auditor(AuditSettings(vocab_size=vocab_size, labels="shifted")))
