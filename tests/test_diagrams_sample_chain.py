"""The sample-chain diagram follows dataset[i] through the three indices of a GPTDataset to its window."""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib
import numpy as np

from helpers.datasets.gpt_dataset import build_sample_index
from helpers.workshop.diagrams.sample_chain import sample_chain

matplotlib.use("Agg")


def test_the_diagram_names_the_sample_its_documents_and_the_eod():
    lengths = np.array([10, 7, 12])  # each document's last token is its EOD
    document_index = np.array([2, 0, 1], dtype=np.int32)
    dataset = SimpleNamespace(seq_length=8, shuffle_index=np.array([2, 0, 1, 3]), document_index=document_index,
                              sample_index=build_sample_index(lengths, document_index, 8, 4),
                              dataset=SimpleNamespace(sequence_lengths=lengths))
    fig = sample_chain(dataset, 0)  # sample 2: tokens 16..24 of the stream, across the end of document 0
    texts = [t.get_text() for ax in fig.axes for t in ax.texts] + [fig.axes[0].get_title()]
    assert "dataset[0] = sample 2: from document index position 1, token 4, to position 2, token 2 (inclusive)" in texts
    assert {"document 0", "document 1", "EOD", "sample 2: 9 tokens (seq_length + 1)"} <= set(texts)
    matplotlib.pyplot.close(fig)
