"""`AuditCallback`: the audit inside a Hugging Face `Trainer` run. It looks at what the model is actually
called with (a forward pre-hook on the model while it trains, after the collator and any column removal),
so a batch the Trainer built wrongly is caught as well as one the dataset made wrongly.

    trainer = Trainer(..., callbacks=[AuditCallback()])   # vocab_size from the model's config

Hugging Face causal-LM models shift `labels` themselves, so `labels` are expected equal to `input_ids`
("same"); a batch that also carries `shift_labels` is audited on those, expected one token on ("shifted").
The auditor's state is saved in each checkpoint folder (`audit_state.json`, by rank 0: under
torch.distributed each rank's auditor holds every rank's digests) and read back by every rank when the run
resumes from it, so a resume that replays batches is named.
"""

from __future__ import annotations

import json
import os

from transformers import TrainerCallback

from ..common.files import write_text_atomically
from .live import Auditor
from ..common.settings import refuse_unknown
from .settings import AuditSettings

STATE_FILE = "audit_state.json"


class AuditCallback(TrainerCallback):
    """Audit every training batch the model sees; `on_finding` "raise" (the default) or "warn"; `settings` (an
    `AuditSettings`, or its fields as keywords) as `Auditor` takes them, but for `vocab_size`, the model's config's
    unless given, and `labels`, read from each batch."""

    def __init__(self, settings: AuditSettings | None = None, *, on_finding: str = "raise", **named):
        refuse_unknown(named, AuditSettings, "AuditCallback", read_here=("labels",))
        if named.get("vocab_size", 0) is None:
            del named["vocab_size"]  # the model's
        self.settings, self.named, self.on_finding = settings, named, on_finding
        self.auditor: Auditor | None = None
        self.saved_state: dict | None = None
        self.handle = None

    def _audit(self, module, args, kwargs) -> None:
        if not module.training or "input_ids" not in kwargs:
            return
        shifted = kwargs.get("shift_labels") is not None
        batch = {"input_ids": kwargs["input_ids"], "labels": kwargs.get("shift_labels" if shifted else "labels"),
                 "attention_mask": kwargs.get("attention_mask")}
        batch = {key: value for key, value in batch.items() if value is not None}
        if self.auditor is None:
            self.auditor = Auditor(self.settings, on_finding=self.on_finding, **self.named,
                                   labels="shifted" if shifted else "same")
            if self.saved_state is not None:
                self.auditor.load_state_dict(self.saved_state)
        self.auditor.step(batch)

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        if self.settings is None and "vocab_size" not in self.named:
            self.named["vocab_size"] = model.config.vocab_size
        folder = os.path.join(args.output_dir, f"checkpoint-{state.global_step}")
        if state.global_step and os.path.isfile(os.path.join(folder, STATE_FILE)):
            with open(os.path.join(folder, STATE_FILE), encoding="utf-8") as file:
                self.saved_state = json.load(file)
        self.handle = model.register_forward_pre_hook(self._audit, with_kwargs=True)

    def on_save(self, args, state, control, **kwargs):
        """Rank 0 writes the state: under torch.distributed every rank's auditor holds every rank's digests."""
        if self.auditor is not None and self.auditor.rank == 0:
            folder = os.path.join(args.output_dir, f"checkpoint-{state.global_step}")
            os.makedirs(folder, exist_ok=True)
            write_text_atomically(os.path.join(folder, STATE_FILE), json.dumps(self.auditor.state_dict()))

    def on_train_end(self, args, state, control, **kwargs):
        if self.handle is not None:
            self.handle.remove()
            self.handle = None
