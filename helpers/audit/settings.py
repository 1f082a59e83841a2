"""What the audit is told about the run whose batches it reads (`AuditSettings`): each setting's name, default and
meaning written once, for `audit`, `audit_ranks`, `Auditor`, `AuditCallback` and `python -m helpers.audit`, each of
which takes the settings whole or their fields as keywords."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, replace

from ..common.errors import UserError
from ..common.settings import refuse_unknown

LABELS = ("same", "shifted", None)
REMEMBER = 1 << 21  # sample digests kept by default: 32 MiB in frozen blocks, plus the newest in a dict


def _setting(doc: str, default=MISSING, *, flag: bool = True, choices: tuple | None = None):
    """A field of `AuditSettings` with its line of documentation; `flag`: `python -m helpers.audit` sets it too."""
    return field(default=default, metadata={"doc": doc, "flag": flag, "choices": choices})


@dataclass(frozen=True)
class AuditSettings:
    """The model's vocabulary and label layout, the run's special ids, and how much the audit remembers; checked
    when made, so a wrong setting is refused in one line before any batch is read."""

    vocab_size: int = _setting("the model's vocabulary size")
    labels: str | None = _setting("what the model expects: labels equal to input_ids (it shifts), or one token on",
                                  None, choices=LABELS[:2])
    pad_id: int | None = _setting("the id padding is written with", None)
    ignore_index: int = _setting("the label that leaves a position out of the loss", -100)
    eod_id: int | None = _setting("the id that ends a document (its EOS)", None)
    remember: int = _setting("the sample digests kept to find replays by (see `helpers.audit.live.Auditor`)",
                             REMEMBER, flag=False)
    bos_id: int | None = _setting("the id that starts a document (its BOS)", None)
    tokenizer_vocab: int | None = _setting("the tokenizer's size, where the audit was given the tokenizer", None,
                                           flag=False)

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        if not isinstance(self.vocab_size, int) or self.vocab_size < 2:
            raise UserError(f"vocab_size {self.vocab_size!r}: not a vocabulary size; fix: pass the model's vocabulary "
                            "size, an integer >= 2 (model.config.vocab_size)")
        if self.labels not in LABELS:
            raise UserError(f"labels={self.labels!r}: no such layout; fix: pass 'same' (the model shifts, as Hugging "
                            "Face models do), 'shifted' (y[t] = x[t+1], as nanoGPT and Megatron) or None")
        if not isinstance(self.remember, int) or self.remember < 1024:
            raise UserError(f"remember={self.remember!r}: too few digests to find a replay by; fix: keep 1,024 or "
                            f"more (the default, {REMEMBER:,}, holds them in under 100 MB)")

    @classmethod
    def given(cls, settings: AuditSettings | None, named: dict, caller: str) -> AuditSettings:
        """`settings`, with the fields `named` as keywords in their place (`audit(batches, vocab_size=V)`); a keyword
        that names no setting, or no `vocab_size` at all, refused as Python refuses a call to `caller`."""
        refuse_unknown(named, cls, caller)
        if settings is None and "vocab_size" not in named:
            raise TypeError(f"{caller}() missing 1 required keyword-only argument: 'vocab_size'")
        if settings is None:
            return cls(**named)
        return replace(settings, **named) if named else settings
