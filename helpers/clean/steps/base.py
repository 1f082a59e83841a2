"""The steps of `helpers.clean`, one class each, on one small interface (datatrove's shape: formatters, filters,
dedup), in files of their kind: `helpers.clean.steps.normalize`, `helpers.clean.steps.exact`, `helpers.clean.steps.fuzzy`.

- A **formatter** takes a text and gives a text (`format`). One that leaves no visible text can drop the document
  (`drops_empty`), saying why (`empty_reason`).
- A **filter** keeps a document or says why it goes (`reason`, e.g. `mean word length 2.1 < 3`; None keeps it).
  A **labeller** is a filter that also labels each document it keeps with record fields (`judge`: the language
  and its score), which the output records carry (JSONL fields, Parquet columns).
- A **dedup** step decides across documents. In each of its passes a worker hands a `Collector` the text of every
  document still kept, as the steps before it left the text, and sends back small arrays, never texts; the driver
  decides from them which documents go (`Dedup.run`). Once decided, the step may go on changing the text of the
  documents kept (`then`, a formatter of the same name: repeated lines are dropped this way).

Formatters and filters are both document steps: `apply(text, notes)` gives the text passed on and, when the
document goes, the reason; `notes` is what the step counts in one pass over one range, for the report. A run is a
list of steps in order (`helpers.clean.steps.plan`); every pass applies the document steps in force to each document, in
whatever process or Ray task it runs, so no result depends on how the input was cut into parts.
"""

from __future__ import annotations

from ..text.text_keys import is_empty


class DocumentStep:
    """A step that decides each document alone (a formatter or a filter)."""

    name = ""
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


class Dedup:
    """A step that decides across documents (see the module docstring)."""

    name = ""

    def run(self, stage) -> None:
        """Collect through `stage.collect(...)` (one pass over every range per call) and mark what goes with
        `stage.remove(...)`; set `then` to change the kept texts from here on."""
        raise NotImplementedError

    then: DocumentStep | None = None
