"""Blend weights as a knob: the order of sources and how often each source's tokens are read.

    from helpers.workshop.explore import blending
    blending.draw_order([0.5, 0.3, 0.2], names)                       # the static figures
    blending.draw_reads([0.5, 0.3, 0.2], names, tokens, 4000, 256)
    blending.explore_weights(names, tokens, 4000, 256, [0.5, 0.3, 0.2])   # sliders that redraw both

Everything here is computed from the weights and the token count of each source's split, without
building datasets, so a slider redraws at once. `tokens_per_source` is each split's tokens per epoch.
"""

from __future__ import annotations

import math
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np

from ...common.headless import headless
from ...datasets.blend_stats import first_repeat, greedy_lags
from ...datasets.blending import SURPLUS, blending_indices, normalize, sizes_per_dataset
from ...datasets.gpt_dataset import number_of_epochs
from . import live


def _colours(count: int):
    return plt.get_cmap("tab10").colors[:count]


def draw_order(weights: Sequence[float], names: Sequence[str], samples: int = 30, longest_period: int = 200):
    """Top: the source of each of the first `samples` blend samples, one lettered cell each. Bottom: each
    source's lag `w x max(i, 1) - count` before step i; the rule picks the largest. The title says from
    which sample the order repeats and how often (periods up to `longest_period`, over 2,000 steps)."""
    picks, lags = greedy_lags(weights, samples)
    repeat = first_repeat(blending_indices(normalize(list(weights)), 2000)[0], longest_period)
    colours = _colours(len(names))
    fig, (strip, lines) = plt.subplots(2, 1, figsize=(9, 4.2), sharex=True, gridspec_kw={"height_ratios": [1, 3]})
    for i, k in enumerate(picks):
        strip.add_patch(plt.Rectangle((i - 0.5, 0), 1, 1, color=colours[k]))
        strip.text(i, 0.5, names[k][0].upper(), ha="center", va="center", fontsize=7, color="white")
    strip.set_ylim(0, 1)
    strip.set_yticks([])
    strip.set_ylabel("source")
    steps = np.arange(samples)
    for k, name in enumerate(names):
        lines.plot(steps, lags[:, k], marker="o", markersize=3, color=colours[k], label=name)
    lines.axhline(0, color="grey", linewidth=0.8)
    if repeat is not None:
        start, period = repeat
        for boundary in range(start + period, samples, period):
            for ax in (strip, lines):
                ax.axvline(boundary - 0.5, color="black", linestyle="--", linewidth=1)
    lines.set_xlim(-0.5, samples - 0.5)
    lines.set_xlabel("blend sample i")
    lines.set_ylabel("lag  w·max(i,1) − count")
    lines.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    shown = "/".join(f"{w:.2f}" for w in normalize(list(weights)))
    if repeat is None:
        repeats = f"no period up to {longest_period} samples"
    elif repeat[0] == 0:
        repeats = f"the order repeats every {repeat[1]} samples"
    else:
        repeats = f"from sample {repeat[0]} on, it repeats every {repeat[1]} samples"
    strip.set_title(f"Weights {shown}: the largest lag is picked; {repeats}")
    fig.tight_layout()
    return fig


def mean_reads(weights: Sequence[float], tokens_per_source: Sequence[int], train_samples: int,
               seq_length: int) -> tuple[np.ndarray, list[int]]:
    """(mean reads per token of each source, epochs of it that Megatron builds) for a blend of
    `train_samples` samples: the blend's draws of a source x seq_length / its tokens per epoch."""
    weights = normalize(list(weights))
    picks, _ = blending_indices(weights, sum(sizes_per_dataset(weights, train_samples)))
    drawn = np.bincount(picks, minlength=len(weights)) * seq_length
    asked = sizes_per_dataset(weights, train_samples, SURPLUS)
    epochs = [number_of_epochs(int(t), n, seq_length) if n else 0 for t, n in zip(tokens_per_source, asked)]
    return drawn / np.asarray(tokens_per_source, dtype=np.float64), epochs


def draw_reads(weights: Sequence[float], names: Sequence[str], tokens_per_source: Sequence[int],
               train_samples: int, seq_length: int):
    """Mean reads per token of each source for the blend, each bar labelled with the epochs built."""
    reads, epochs = mean_reads(weights, tokens_per_source, train_samples, seq_length)
    fig, ax = plt.subplots(figsize=(7, 3.6))
    bars = ax.bar(list(names), reads, color=_colours(len(names)))
    ax.bar_label(bars, labels=[f"{r:.2f} reads\n({e} epoch{'s' * (e != 1)} built)" for r, e in zip(reads, epochs)],
                 fontsize=8)
    ax.axhline(1, color="black", linestyle=":", linewidth=1)
    ax.text(len(names) - 0.5, 1, " every token once", va="bottom", ha="right", fontsize=8)
    ax.set_ylim(0, max(1.2, float(reads.max()) * 1.3))
    ax.set_ylabel("reads per token (mean)")
    shown = "/".join(f"{w:.2f}" for w in normalize(list(weights)))
    ax.set_title(f"How often each source's tokens are read: {train_samples} samples of {seq_length} "
                 f"at weights {shown}", fontsize=10)
    fig.tight_layout()
    return fig


def explore_weights(names: Sequence[str], tokens_per_source: Sequence[int], train_samples: int, seq_length: int,
                    weights: Sequence[float]) -> None:
    """Sliders, one weight per source, that redraw the order and the reads figures (headless: one line)."""
    def draw(**chosen):
        values = [chosen[name] for name in names]
        if not math.fsum(values) > 0:
            print("give at least one source a weight above 0")
            return
        draw_order(values, names)
        draw_reads(weights=values, names=names, tokens_per_source=tokens_per_source, train_samples=train_samples,
                   seq_length=seq_length)

    if not headless():
        import ipywidgets

        controls = {name: ipywidgets.FloatSlider(value=w, min=0.0, max=1.0, step=0.05, description=name,
                                                 continuous_update=False) for name, w in zip(names, weights)}
    else:
        controls = dict.fromkeys(names)
    live(draw, "Blend weights: the order of sources and the reads per token", **controls)


def draw_unread(budgets: Sequence[float], unread_by_order: dict[str, Sequence[float]], title: str):
    """Share of tokens never read against the tokens drawn (in epochs), one line per sampling order,
    with `exp(-budget)`, what windows drawn with replacement leave unread on average."""
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for label, unread in unread_by_order.items():
        ax.plot(budgets, unread, marker="o", label=label)
    smooth = np.linspace(0, max(budgets), 100)
    ax.plot(smooth, np.exp(-smooth), color="grey", linestyle=":", label="exp(−epochs)")
    ax.set_xlabel("tokens drawn (epochs of the source)")
    ax.set_ylabel("share of tokens never read")
    ax.set_ylim(0, 1)
    ax.set_title(title, fontsize=10)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
