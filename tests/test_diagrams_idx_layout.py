"""The .idx → .bin drawing writes the dataset's own numbers into its cells."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers.datasets.indexed import IndexedDataset, IndexedWriter
from helpers.workshop.diagrams.idx_layout import idx_layout


def test_the_cells_hold_the_arrays_of_a_written_dataset(tmp_path):
    with IndexedWriter(tmp_path / "tiny", np.int32) as writer:
        for document in ([5, 6, 7], [8, 9], [10, 11, 12, 13]):
            writer.add_document(np.array(document))
        writer.finalize()
    ds = IndexedDataset(tmp_path / "tiny")
    fig = idx_layout(ds.sequence_lengths, ds.sequence_pointers, ds.document_indices, ds.dtype, shown=3)
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert {"3", "2", "4"} <= texts                    # sequence lengths
    assert {"0", "12", "20"} <= texts                  # byte pointers: 3 and 2 int32 tokens before
    assert {"byte 12", "byte 20"} <= texts and "header\n34 bytes" in texts
    plt.close(fig)


def test_an_empty_dataset_is_refused():
    with pytest.raises(ValueError, match="no sequences"):
        idx_layout(np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(1, np.int64), np.int32)
