"""The interface every step of `helpers.clean` is written on (datatrove's shape: formatters, filters, dedup).

- A **formatter** takes a text and gives a text (`format`); one that leaves no visible text can drop the document.
- A **filter** keeps a document or says why it goes (`reason`, e.g. `mean word length 2.1 < 3`; None keeps it).
  A **labeller** is a filter that also labels each document it keeps (`judge`), which the output records carry.
- A **dedup** step decides across documents: through the run's `Stage` (`helpers.clean.run.stage`) it makes passes
  in which a worker hands a `Collector` each kept text and sends back small arrays, then marks what goes. Once it
  has decided, it may change the kept texts from then on (`then`, a formatter of the same name).

A step class also owns how a run asks for it (`Step`): its settings (`options`, each an `Option`: keyword of
`clean(...)`, command-line flag, default, help), reading them with their checks (`read`), building itself from
them (`build`), warming up once before workers start (`warm_up`) and its section of `report.json` (`report`).
Registered (`helpers.clean.steps.registry.register_step`), it is on the command line, in `removed.jsonl` and in
the report. docs/architecture.md shows a step added from one file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..text.text_keys import is_empty


@dataclass(frozen=True)
class Option:
    """One setting a step reads: its keyword in `clean(...)`, its default, one line of help, and its command-line
    flag (`flag`: default `--keyword`, with dashes; None: a keyword only) taken as `cli` says (argparse's `type`,
    `action`, `nargs`, `const`, `metavar`, `choices`). An option after a step's first is refused on the command line
    without that first one, the switch that asks for the step, unless `needs_switch` is False."""

    keyword: str
    default: Any = None
    help: str = ""
    flag: str | None = ""
    cli: dict = field(default_factory=dict)
    reported: bool = True  # shown among report.json's settings
    needs_switch: bool = True  # refused on the command line without the step's switch (the first option)

    @property
    def flag_name(self) -> str | None:
        return None if self.flag is None else self.flag or "--" + self.keyword.replace("_", "-")


class Step:
    """What every step owns: its name (in `removed.jsonl` and the report), its settings and how a run asks for it,
    its warm-up and its report section. The class methods read settings; a run holds instances."""

    name = ""
    options: ClassVar[tuple[Option, ...]] = ()  # the first is the switch that asks for the step
    by_rule = False  # the report counts its removals by the rule that made them
    spills = False  # it holds its data within the run's memory limit, spilling the rest to disk
    runs_last = False  # a step registered later still runs before it (PII masking: on what every step kept)

    @classmethod
    def read(cls, values: dict) -> dict:
        """`values` (one per option, by keyword) checked, as the step and the report take them; a `UserError`
        names a bad one."""
        return values

    @classmethod
    def asked(cls, values: dict) -> bool:
        """Whether the settings ask for the step: its switch is on, or holds something."""
        return values[cls.options[0].keyword] not in (None, False, (), [], "")

    @classmethod
    def build(cls, values: dict) -> list:
        """The steps to run for these settings, in order."""
        return [cls()]

    @classmethod
    def shown(cls, values: dict) -> dict:
        """The settings as report.json's `settings` shows them."""
        return {option.keyword: values[option.keyword] for option in cls.options if option.reported}

    def warm_up(self) -> None:
        """Load, once in the driver, what forked workers should start with (a model, compiled loops)."""

    report = None  # or a method: `report(stage) -> dict`, the step's section of report.json


class DocumentStep(Step):
    """A step that decides each document alone (a formatter or a filter)."""

    counted: tuple[str, ...] = ()  # numbers it notes that the report gives per input (e.g. addresses replaced)

    def apply(self, text: str, notes: dict) -> tuple[str, str | None]:
        """The text passed on, and None, or the reason the document goes."""
        raise NotImplementedError


class Formatter(DocumentStep):
    """Text in, text out; with `drops_empty`, a document left with no visible text goes."""

    drops_empty = False
    empty_reason = ""

    def format(self, text: str, notes: dict) -> str:
        raise NotImplementedError

    def apply(self, text: str, notes: dict) -> tuple[str, str | None]:
        new = self.format(text, notes)
        return new, self.empty_reason if self.drops_empty and self.emptied(text, new) else None

    def emptied(self, before: str, after: str) -> bool:
        """Whether the step left the document with nothing worth keeping."""
        return is_empty(after)


class Filter(DocumentStep):
    """Keep, or drop with a reason; the text is never changed."""

    def reason(self, text: str) -> str | None:
        raise NotImplementedError

    def apply(self, text: str, notes: dict) -> tuple[str, str | None]:
        return text, self.reason(text)


class Labeller(Filter):
    """A filter that labels the documents it keeps: `fields` names each label and its kind ("string" or "float",
    for a columnar output's schema); the output records carry them. Its labels are made again in the pass that
    writes, so it is never `Decided`."""

    fields: dict[str, str] = {}

    def judge(self, text: str) -> tuple[str | None, dict]:
        """The reason the document goes (None keeps it), and its labels."""
        raise NotImplementedError

    def reason(self, text: str) -> str | None:
        return self.judge(text)[0]


def labelled_fields(steps: list) -> dict[str, str]:
    """The record fields the labellers among `steps` add, with their kinds, in order."""
    return {name: kind for step in steps if isinstance(step, Labeller) for name, kind in step.fields.items()}


class Decided(DocumentStep):
    """A filter whose verdicts an earlier pass recorded, in a later pass: every document that reaches it passed, so it
    is not asked again (a filter never changes a text)."""

    def __init__(self, step: Filter):
        self.name = step.name

    def apply(self, text: str, notes: dict) -> tuple[str, str | None]:
        return text, None


class Collector:
    """What one pass of a dedup step gathers from one range, in a worker: within `with collector:`, `add` for each
    document still kept (its position in the range and its text as the steps in force leave it), then `result`
    (small arrays). A collector that writes files opens them on entering and closes them on leaving."""

    def __enter__(self) -> "Collector":
        return self

    def __exit__(self, *error) -> None:
        return None

    def add(self, position: int, text: str) -> None:
        raise NotImplementedError

    def result(self):
        raise NotImplementedError


class Dedup(Step):
    """A step that decides across documents (see the module docstring)."""

    def run(self, stage) -> None:
        """Collect through `stage.collect(...)` (one pass over every range per call) and mark what goes with
        `stage.remove(...)` (`helpers.clean.run.stage.Stage`); set `then` to change the kept texts from here on."""
        raise NotImplementedError

    then: DocumentStep | None = None
