"""The near-duplicate step of `helpers.clean` (`--fuzzy`), a dedup step (`helpers.clean.steps.base`): MinHash signatures
of word n-grams, LSH with the bands and rows chosen for recall at the threshold (or given), each candidate verified
on the exact Jaccard of the two shingle sets against its bucket's representatives, grouped with union-find
(`helpers.clean.text.lsh`); all but each group's first document go.

Two passes: the signatures (each worker writes its band keys to hidden files of the run, read back a band at a time
within the memory limit: `helpers.clean.text.band_files`), then the shingle sets of the documents LSH put in a bucket
(written to one hidden file per range, memory-mapped by the driver for the checks)."""

from __future__ import annotations

import functools
import time
from contextlib import ExitStack
from pathlib import Path

import numpy as np

from ...common.errors import UserError
from ...common.files import written_atomically
from ..text.band_files import BandKeys, KeyWriter, band_budget
from ..text.lsh import all_band_keys, check_bands, check_threshold, choose_bands, cluster, s_curve_points
from ..text.shingles import distinct_shingles, sets_jaccard, signatures
from .base import Collector, Dedup, Option

SIGN_BATCH_BYTES = 16 << 20  # text a worker signs (or turns into shingle sets) at a time


class _Signer(Collector):
    """Texts signed a batch at a time (SIGN_BATCH_BYTES), so a worker holds one batch of texts, not its range's;
    each batch's band keys go to the range's band files and its signatures are dropped. Rows of texts without a
    shingle are left out."""

    def __init__(self, step: "FuzzyDedup", *, bands: int, rows: int, paths: list[str]):
        self.ngram, self.num_perm, self.seed = step.ngram, step.num_perm, step.seed
        self.bands, self.band_rows = bands, rows
        self.paths = paths
        self.rows: list[np.ndarray] = []
        self.pending_rows: list[int] = []
        self.pending: list[str] = []
        self.size = 0

    def add(self, position: int, text: str) -> None:
        self.pending_rows.append(position), self.pending.append(text)
        self.size += len(text)
        if self.size >= SIGN_BATCH_BYTES:
            self._sign()

    def __enter__(self) -> "_Signer":
        self.writer = KeyWriter(self.paths)
        return self

    def __exit__(self, *error) -> None:
        self.writer.close()

    def _sign(self) -> None:
        if self.pending:
            matrix, shingles = signatures(self.pending, self.ngram, self.num_perm, self.seed)
            self.rows.append(np.array(self.pending_rows, np.int64)[shingles > 0])
            self.writer.append(all_band_keys(matrix[shingles > 0], self.bands, self.band_rows))
        self.pending_rows, self.pending, self.size = [], [], 0

    def result(self) -> np.ndarray:
        """The rows signed, in the order of their keys in the band files."""
        self._sign()
        return np.concatenate(self.rows) if self.rows else np.zeros(0, np.int64)


class _ShingleWriter(Collector):
    """The distinct shingle hashes of the documents flagged in `wanted`, sorted, written back to back to `path`
    (uint64, a batch at a time, under a name of this process until complete); the result: their positions in the
    range and the offsets that cut the file into them."""

    def __init__(self, ngram: int, wanted: np.ndarray, path: str):
        self.ngram, self.wanted, self.path = ngram, wanted, path
        self.positions: list[int] = []
        self.sizes: list[np.ndarray] = []
        self.batch: list[str] = []
        self.size = 0

    def add(self, position: int, text: str) -> None:
        if not self.wanted[position]:
            return
        self.positions.append(position)
        self.batch.append(text)
        self.size += len(text)
        if self.size >= SIGN_BATCH_BYTES:
            self._flush()

    def __enter__(self) -> "_ShingleWriter":
        self.files = ExitStack()
        self.out = self.files.enter_context(written_atomically(self.path, "wb"))
        return self

    def __exit__(self, *error) -> None:
        return self.files.__exit__(*error)

    def _flush(self) -> None:
        if self.batch:
            flat, offsets = distinct_shingles(self.batch, self.ngram)
            self.out.write(flat.astype(np.uint64).tobytes())
            self.sizes.append(np.diff(offsets))
        self.batch, self.size = [], 0

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        self._flush()
        counts = np.concatenate(self.sizes) if self.sizes else np.zeros(0, np.int64)
        return np.array(self.positions, np.int64), np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


class FuzzyDedup(Dedup):
    name = "fuzzy"
    spills = True
    options = (
        Option("fuzzy", False, "drop near-duplicates (MinHash + LSH, word n-grams)", cli={"action": "store_true"},
               reported=False),
        Option("threshold", 0.8, "Jaccard similarity of a near-duplicate (--fuzzy; default 0.8)", cli={"type": float}),
        Option("ngram", 5, "--fuzzy: words per shingle (default 5)", cli={"type": int}),
        Option("num_perm", 128, "MinHash permutations (--fuzzy; default 128)", cli={"type": int}),
        Option("bands", None, "LSH bands of --fuzzy, with --rows (default: chosen for recall at --threshold)",
               cli={"type": int}),
        Option("rows", None, "rows of each LSH band, with --bands", cli={"type": int}),
        Option("seed", 1, "the MinHash seed", flag=None),
    )

    @classmethod
    def read(cls, values: dict) -> dict:
        check_threshold(values["threshold"])
        check_bands(values["bands"], values["rows"], values["num_perm"])
        if values["ngram"] < 1 or values["num_perm"] < 2:
            raise UserError(f"--ngram {values['ngram']} --num-perm {values['num_perm']}: need at least 1 word and 2 "
                            "permutations; fix: e.g. --ngram 5 --num-perm 128")
        return values

    @classmethod
    def build(cls, values: dict) -> list:
        return [cls(**{key: value for key, value in values.items() if key != "fuzzy"})]

    def __init__(self, *, threshold: float, ngram: int, num_perm: int, bands: int | None = None,
                 rows: int | None = None, seed: int = 1):
        self.threshold, self.ngram, self.num_perm, self.seed = threshold, ngram, num_perm, seed
        self.given = (bands, rows)
        self.summary: dict | None = None

    @functools.cached_property
    def bands(self) -> tuple[int, int]:
        """The LSH bands and rows of this run: given, or chosen for recall at the threshold."""
        return choose_bands(self.threshold, self.num_perm) if self.given[0] is None else self.given

    def run(self, stage) -> None:
        stage.read()  # the records counted first: a memory limit too small is refused before anything is signed
        band_budget(stage.memory_limit, len(stage.documents))
        bands, rows_per_band = self.bands
        key_files = [stage.hidden_files(f"keys{task.index}", bands) for task in stage.tasks]
        signed = stage.collect("signatures", [_Signer(self, bands=bands, rows=rows_per_band, paths=paths)
                                      for paths in key_files])
        start = time.perf_counter()
        rows = np.concatenate([stage.offsets[k] + r for k, r in enumerate(signed)])
        keys = BandKeys(key_files, [len(r) for r in signed])
        budget = band_budget(stage.memory_limit, len(stage.documents))
        in_bucket = np.zeros(len(rows), bool)
        for members in keys.buckets(bands, budget):
            in_bucket[members] = True
        seconds = time.perf_counter() - start
        stage.timed("fuzzy lsh", seconds, len(rows))  # listed before the shingle pass, as it starts first
        sets = self._shingle_sets(stage, rows[in_bucket])
        start = time.perf_counter()
        checked_with = np.full(len(rows), -1, np.int64)  # each document's last check: with whom, and its value
        checked_value = np.zeros(len(rows), np.float64)

        def similar(first: int, second: int) -> bool:
            checked_with[first], checked_value[first] = second, sets.jaccard(rows[first], rows[second])
            return checked_value[first] >= self.threshold

        found = cluster(len(rows), keys.buckets(bands, budget), similar)
        roots = found.roots
        duplicate = roots != np.arange(len(rows))
        similarity = [  # the check that joined most copies was with the kept one
            float(checked_value[i]) if checked_with[i] == roots[i] else sets.jaccard(rows[i], rows[roots[i]])
            for i in np.flatnonzero(duplicate).tolist()]
        stage.remove(rows[duplicate], self.name, duplicate_of=rows[roots[duplicate]], similarity=similarity)
        sets.close()
        keys.remove()
        stage.timed("fuzzy lsh", seconds + time.perf_counter() - start, len(rows))
        self.summary = {
            "threshold": self.threshold, "ngram": self.ngram, "num_perm": self.num_perm, "bands": bands,
            "rows": rows_per_band,
            "bands_from": "chosen for recall at the threshold" if self.given[0] is None else "--bands and --rows",
            "candidate_probability": s_curve_points(self.threshold, bands, rows_per_band),
            "documents_signed": int(len(rows)), "candidate_documents": int(in_bucket.sum()),
            "memory_limit_bytes": stage.memory_limit, "band_slices": keys.slices(budget),
            "buckets": found.buckets, "candidate_pairs": found.bucket_pairs, "comparisons": found.comparisons,
            "verified_pairs": found.joins, "most_representatives": found.most_representatives,
            "over_representative_cap": found.over_cap, "groups": int(len(np.unique(roots[duplicate]))),
            "group_sizes": group_sizes(roots), "removed": int(duplicate.sum())}

    def _shingle_sets(self, stage, wanted: np.ndarray) -> "_ShingleSets":
        """The distinct shingles of the documents `wanted` (run indices), written by each range's worker to a
        hidden file of its own and read from there, memory-mapped, as the check needs them."""
        flags = np.zeros(len(stage.documents), bool)
        flags[wanted] = True
        files = [stage.hidden_files(f"shingles{task.index}")[0] for task in stage.tasks]
        offsets = stage.offsets
        found = stage.collect("shingle sets", [_ShingleWriter(self.ngram, flags[offsets[k]:offsets[k + 1]], str(file))
                                               for k, file in enumerate(files)], documents=len(wanted))
        return _ShingleSets(len(stage.documents), offsets, [Path(file) for file in files], found)

    def report(self, stage) -> dict | None:
        return self.summary


class _ShingleSets:
    """The shingle sets one pass wrote, one file per range, memory-mapped: a document's set by run index."""

    def __init__(self, count: int, offsets: np.ndarray, files: list[Path], results: list):
        self.files = files
        self.maps = [np.asarray(np.memmap(file, dtype=np.uint64, mode="r")) if file.stat().st_size  # plain views:
                     else np.zeros(0, np.uint64) for file in files]  # a memmap's slices cost 3 us each
        self.part = np.full(count, -1, np.int64)
        self.start = np.zeros(count, np.int64)
        self.end = np.zeros(count, np.int64)
        for k, (positions, set_offsets) in enumerate(results):
            where = offsets[k] + positions
            self.part[where], self.start[where], self.end[where] = k, set_offsets[:-1], set_offsets[1:]

    def of(self, document: int) -> np.ndarray:
        return self.maps[self.part[document]][self.start[document]:self.end[document]]

    def jaccard(self, first: int, second: int) -> float:
        """The exact Jaccard similarity of two documents' shingle sets."""
        return sets_jaccard(self.of(first), self.of(second))

    def close(self) -> None:
        self.maps = []
        for file in self.files:
            file.unlink(missing_ok=True)


def group_sizes(roots: np.ndarray) -> dict[str, int]:
    """How many groups of near-duplicates have each size (the kept document counted), smallest size first."""
    members = np.bincount(roots, minlength=len(roots))
    sizes, groups = np.unique(members[members >= 2], return_counts=True)
    return {str(int(size)): int(count) for size, count in zip(sizes, groups)}
