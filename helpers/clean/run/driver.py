"""A cleaning run from start to end: the request checked, the steps run in order over the stage's passes, the kept
records written range by range and joined per input, `removed.jsonl` and `report.json` written, and every output
moved into place together (`helpers.clean.run.output_folder`); a failed or interrupted run leaves none."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ...common.errors import UserError
from ...common.files import remove_stale_temporaries, temporary_name
from ...common.stop_signals import check_signals, signals_held
from ...corpus.columnar import SAVED_STATE
from ...engines.choice import engine_for
from ..steps.base import DocumentStep, labelled_fields
from ..steps.registry import read_settings, report_sections, shown_settings, steps_asked
from ..text.shingles import NATIVE_LIBRARY
from .options import RunOptions, check_run_keywords_free, run_keywords
from .output_folder import REMOVED, REPORT, clear, earlier_outputs, stale_outputs
from .parquet import read_columns, saved_state
from .passes import write_part
from .report import removed_lines, step_table
from .requests import check_request, output_name, range_tasks, saved_metadata, shown_name
from .stage import Stage


def clean(inputs, output_dir, steps: list | None = None, options: RunOptions | None = None, **settings) -> dict:
    """Clean `inputs` into `output_dir` (docs/cleaning.md); returns the report. `steps`: the steps to run, in order
    (the package's and a user's own: `helpers.clean.steps.base`), instead of those the settings ask for. `options`:
    the run's own settings (`RunOptions`); `settings`: keywords, each a step's setting (`exact=True`, `threshold=0.7`:
    every registered step's `options`) or a run option (`workers=2`)."""
    check_run_keywords_free()
    options = RunOptions.of(options, settings)
    given = {key: value for key, value in settings.items() if key not in run_keywords()}
    if steps is not None and given:
        raise UserError(f"clean(steps=...) runs the steps given, so {', '.join(sorted(given))} would be ignored; fix: "
                        "set it on the step itself, or leave steps out")
    chosen = read_settings(given)
    steps = steps_asked(chosen) if steps is None else list(steps)
    run = CleaningRun(inputs, Path(output_dir), options, steps)
    for step in {type(step): step for step in steps}.values():
        step.warm_up()  # once here: forked workers start with what it loads
    started = time.perf_counter()
    try:
        with engine_for(options.engine, options.workers, options.ray_address, (NATIVE_LIBRARY, __name__)) as runner:
            run.stage.seconds["engine start"] = time.perf_counter() - started  # so that no pass's figure carries it
            report = run.execute(runner, shown_settings(chosen))
        report.update(engine=options.engine, workers=options.workers, parts=len(run.stage.tasks),
                      seconds_total=time.perf_counter() - started)
        run.commit(report)
    finally:  # once every worker has stopped: none can write a part after this
        run.remove_temporaries()
    return report


class CleaningRun:
    """One run's inputs, stage and outputs."""

    def __init__(self, inputs, out: Path, options: RunOptions, steps: list):
        sources, empty = check_request([Path(path) for path in inputs], out, options, steps)
        self.sources, self.out, self.options, self.steps = sources, out, options, steps
        self.paths = [source.path for source in sources]
        self.names = [shown_name(path) for path in self.paths]  # in reports
        self.empty = [shown_name(path) for path in empty]  # empty input files passed over (--skip-bad-records)
        columns = [read_columns(source, options.text_key) if source.columnar else () for source in sources]
        self.earlier = earlier_outputs(out)  # the outputs the earlier run into `out` listed
        out.mkdir(parents=True, exist_ok=True)
        self.outputs = [output_name(path) for path in self.paths]
        for name in [*self.outputs, *saved_metadata(self.paths), REMOVED, REPORT]:
            (out / name).parent.mkdir(exist_ok=True)  # a saved dataset's folder
            remove_stale_temporaries(out / name)
        self.stage = Stage(options=options, tasks=range_tasks(sources, columns, options.ranges), out=out, steps=steps,
                           names=self.names)
        self.metadata: list[str] = []  # saved datasets' state.json and dataset_info.json, under `out`
        self.removed: list[str] = []  # the lines of removed.jsonl, once the run is done

    def remove_temporaries(self) -> None:
        """Remove every file this run wrote under a temporary name, workers' unfinished parts included."""
        for path in self.stage.temporaries:
            for written in path.parent.glob(f"{path.name}*"):
                written.unlink(missing_ok=True)

    def execute(self, runner, settings: dict) -> dict:
        """Every step in order, its passes and decisions, then the outputs written; the report."""
        stage = self.stage
        stage.runner = runner
        for step in self.steps:
            if isinstance(step, DocumentStep):
                stage.chain.append(step)
                continue
            step.run(stage)
            if step.then is not None:
                stage.chain.append(step.then)
        if stage.documents is None:  # no dedup step has read the records
            stage.read_only()
        self._write()
        return self._report(settings)

    def _report(self, settings: dict) -> dict:
        stage, tasks = self.stage, self.stage.tasks
        bad = [[entry for s, task in zip(stage.scans, tasks) if task.input_index == index for entry in s.bad]
               for index in range(len(self.names))]
        self.removed = removed_lines(stage.documents, self.names, bad, [source.group_word for source in self.sources])
        file_bytes = [sum(s.input_bytes for s, task in zip(stage.scans, tasks) if task.input_index == index)
                      for index in range(len(self.names))]
        steps = [step.name for step in self.steps]
        return {"output_dir": str(self.out),
                "settings": {"steps": steps, **settings, "text_key": self.options.text_key,
                             "skip_bad_records": self.options.skip_bad_records},
                "inputs": step_table(documents=stage.documents, names=self.names, bad_counts=[len(b) for b in bad],
                                     file_bytes=file_bytes, steps=steps, counted=stage.counted,
                                     by_rule={step.name for step in self.steps if step.by_rule}),
                "blank_lines": sum(s.blank_lines for s in stage.scans), "removed": len(self.removed),
                **report_sections(self.steps, stage), "empty_inputs_skipped": self.empty,
                "seconds": stage.seconds, "documents_per_second": stage.rates}

    def _write(self) -> None:
        """Write every range's kept records into a part file, then join each input's parts in order."""
        stage = self.stage
        chain = stage.in_force()
        parts = [temporary_name(self.out / self.outputs[task.input_index], f"part{task.index}") for task in stage.tasks]
        stage.temporaries.extend(parts)  # and each worker's `{part}.tmp-{pid}` while it writes
        passed = stage.run_pass("write", [(write_part, task, self.options, chain, mask, str(part))
                                          for task, mask, part in zip(stage.tasks, stage.masks(), parts)],
                                int(stage.documents.alive().sum()))
        stage.record(chain, passed)
        for index, name in enumerate(self.outputs):
            joined = temporary_name(self.out / name)
            stage.temporaries.append(joined)
            mine = [part for task, part in zip(stage.tasks, parts) if task.input_index == index]
            self.sources[index].join_parts(mine, joined, fields=labelled_fields(chain))
            check_signals()
        self._write_saved_metadata(labelled_fields(chain))

    def _write_saved_metadata(self, fields: dict) -> None:
        """Each cleaned saved dataset's state.json (listing its files, a new fingerprint) and its
        dataset_info.json, under temporary names like the outputs, to move into place with them."""
        metadata = saved_metadata(self.paths)
        for name, (folder, files) in metadata.items():
            if not name.endswith(SAVED_STATE):
                continue
            written = [temporary_name(self.out / output_name(file)) for file in files]
            state, info = saved_state(folder, [file.name for file in files], written, fields=fields)
            for text, metadata_name in ((state, name), (info, f"{folder.name}/dataset_info.json")):
                path = temporary_name(self.out / metadata_name)
                self.stage.temporaries.append(path)
                path.write_text(text, encoding="utf-8")
        self.metadata = list(metadata)

    def commit(self, report: dict) -> None:
        """Write `removed.jsonl` and `report.json` (with the outputs, and the earlier run's files this run clears),
        then move every output into place together and clear those files (`helpers.clean.run.output_folder`)."""
        written = [*self.outputs, *self.metadata]
        stale = stale_outputs(self.out, self.earlier, written, self.paths)
        report.update(outputs=written, cleared=stale)
        listing, summary = temporary_name(self.out / REMOVED), temporary_name(self.out / REPORT)
        self.stage.temporaries.extend([listing, summary])
        with open(listing, "w", encoding="utf-8") as out:
            out.writelines(self.removed)
        summary.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        check_signals()
        with signals_held():
            for name in written:
                os.replace(temporary_name(self.out / name), self.out / name)
            os.replace(listing, self.out / REMOVED)
            os.replace(summary, self.out / REPORT)
            clear(self.out, stale)
