"""The workshop's core path fits a 90-minute room, and a learner who skips every deep dive can still run it.

The core path is every cell of `notebooks/NN_*.ipynb` not tagged `optional`; deep dives are `optional` cells under
a heading that says "Deep dive", and the exercises for after the workshop an `optional` section at the end, both
collapsed in JupyterLab. Each lesson has a `your-turn` cell the learner writes in the room.
"""

from __future__ import annotations

import ast
import re

import nbformat
import pytest

from helpers.common.paths import NOTEBOOK_DIR

LESSONS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
README = NOTEBOOK_DIR.parent / "README.md"
CORE_WORDS = 9_500  # prose and printed output of core cells, all lessons: under 53 minutes at 180 words a minute
READING_SPEED = 180  # words a minute
AGENDA_ROW = re.compile(r"^\| (\d+)–(\d+) \| (\d\d) ", re.M)


def cells(path):
    return nbformat.read(path, as_version=4).cells


def optional(cell) -> bool:
    return "optional" in cell.metadata.get("tags", [])


def printed_words(cell) -> int:
    """Words a reader reads in a code cell's output: printed text and plain-text results (not figures)."""
    words = 0
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            words += len(output.text.split())
        elif output.output_type in ("execute_result", "display_data") and "image/png" not in output.get("data", {}):
            words += len(output.get("data", {}).get("text/plain", "").split())
    return words


def core_words(path) -> int:
    """Prose (markdown) and printed output of the cells not tagged `optional`."""
    return sum(len(cell.source.split()) if cell.cell_type == "markdown" else printed_words(cell)
               for cell in cells(path) if not optional(cell))


def agenda_tables() -> tuple[str, str]:
    """The README's 90-minute table and its half-day table."""
    readme = README.read_text(encoding="utf-8")
    core, rest = readme.split("**90 minutes: the core path.**")[1].split("**Half a day")
    return core, rest


def core_lessons() -> list:
    """The lessons of the 90-minute path: those its agenda names (a later lesson belongs to the half day only)."""
    named = {number for _, _, number in AGENDA_ROW.findall(agenda_tables()[0])}
    return [path for path in LESSONS if path.name[:2] in named]


def test_every_lesson_outside_the_core_path_has_a_slot_in_the_half_day():
    half_day = agenda_tables()[1].split("\n\n**")[0]
    for path in LESSONS:
        if path not in core_lessons():
            assert re.search(rf"^\| \d+–\d+ \| {path.name[:2]} ", half_day, re.M), f"{path.name}: no half-day slot"


def test_the_core_path_reads_in_at_most_nine_thousand_five_hundred_words():
    words = {path.name[:2]: core_words(path) for path in core_lessons()}
    assert sum(words.values()) <= CORE_WORDS, f"core words per notebook: {words}, {sum(words.values()):,} in all"


def test_the_readme_agenda_runs_every_lesson_in_order_in_ninety_minutes_each_long_enough_to_read():
    """The 90-minute table: slots back to back from 0 to 90, the lessons in numbered order, and each slot at least
    its core words at 180 a minute plus two minutes (compute and the exercise take the rest)."""
    slots = [(int(start), int(end), number) for start, end, number in AGENDA_ROW.findall(agenda_tables()[0])]
    assert [number for _, _, number in slots] == [path.name[:2] for path in LESSONS][:len(slots)]
    assert slots[0][0] == 0 and slots[-1][1] == 90
    assert all(end == next_start for (_, end, _), (next_start, _, _) in zip(slots, slots[1:])), slots
    short = {number: (end - start, round(core_words(path) / READING_SPEED + 2, 1))
             for (start, end, number), path in zip(slots, core_lessons())
             if end - start < core_words(path) / READING_SPEED + 2}
    assert not short, f"agenda minutes against reading minutes + 2: {short}"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name[:2])
def test_every_deep_dive_is_optional_from_its_heading_to_the_next_core_heading(path):
    """A deep dive opens with an optional `## Deep dive: ...` heading (collapsed in JupyterLab), and every cell up to
    the next heading of its level is optional too; no optional cell stands alone in the core path. The exercises
    for after the workshop (`## Exercises, ...`, at the end) are a collapsed optional section the same way."""
    inside, level, wrong = False, 0, []
    for index, cell in enumerate(cells(path)):
        heading = re.match(r"(#+) ", cell.source) if cell.cell_type == "markdown" else None
        if heading and inside and len(heading.group(1)) <= level:
            inside = False
        first_line = cell.source.splitlines()[0].lower() if heading else ""
        if heading and ("deep dive" in first_line or first_line.startswith("## exercises")):
            inside, level = True, len(heading.group(1))
            if not cell.metadata.get("jp-MarkdownHeadingCollapsed"):
                wrong.append((index, "deep-dive heading not collapsed"))
        if inside != optional(cell):
            wrong.append((index, "optional outside a deep dive" if optional(cell) else "core cell inside a deep dive"))
    assert not wrong, f"{path.name}: {wrong}"


def defined_and_used(source: str) -> tuple[set[str], set[str]]:
    """Names a cell binds (assignments, imports, defs, loop targets) and names it reads."""
    tree = ast.parse(re.sub(r"^\s*[!%].*$", "", source, flags=re.M))
    bound, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, ast.Store) else read).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return bound, read


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name[:2])
def test_a_core_cell_reads_no_name_that_only_a_deep_dive_defines(path):
    """Skipping every deep dive leaves a notebook that runs: names a core cell reads come from core cells."""
    core_bound, only_optional, missing = set(), set(), []
    for index, cell in enumerate(cells(path)):
        if cell.cell_type != "code":
            continue
        bound, read = defined_and_used(cell.source)
        if optional(cell):
            only_optional |= bound - core_bound
        else:
            missing += [(index, name) for name in sorted(read & only_optional - core_bound - bound)]
            core_bound |= bound
    assert not missing, f"{path.name}: core cells read names defined only in deep dives: {missing}"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name[:2])
def test_every_lesson_has_a_your_turn_cell_followed_by_its_check(path):
    notebook = cells(path)
    turns = [i for i, cell in enumerate(notebook) if "your-turn" in cell.metadata.get("tags", [])]
    assert turns, f"{path.name}: no cell tagged your-turn"
    for index in turns:
        assert notebook[index].cell_type == "code" and not optional(notebook[index]), f"{path.name}: cell {index}"
        following = [c.source for c in notebook[index + 1:index + 4] if c.cell_type == "code"]
        assert any("check(" in source for source in following), f"{path.name}: no check after your-turn cell {index}"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name[:2])
def test_no_core_cell_is_mostly_metric_records(path):
    """`record(...)` keeps a metric for a headless run out of the reader's view; a cell the reader runs does
    something they read, and its records ride along (at most a third of its lines)."""
    heavy = []
    for index, cell in enumerate(cells(path)):
        if cell.cell_type != "code" or optional(cell):
            continue
        lines = [line.strip() for line in cell.source.splitlines() if line.strip() and not line.strip().startswith("#")]
        records = [line for line in lines if line.startswith("record(")]
        if records and 3 * len(records) > len(lines):
            heavy.append((index, f"{len(records)} of {len(lines)} lines"))
    assert not heavy, f"{path.name}: core cells mostly record(...): {heavy}"
