"""Every figure the notebooks show: labelled matplotlib, one idea per figure."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np


def log_bins(values: np.ndarray, count: int = 40) -> np.ndarray:
    """`count` log-spaced bin edges from the smallest value (at least 1) to exactly the largest, so the
    longest document lands in the last bin (an edge computed through log10 can round just below it)."""
    low, high = max(float(values.min()), 1.0), max(float(values.max()), 1.0)
    edges = np.geomspace(low, high, count) if high > low else np.array([low, low + 1.0])
    edges[0], edges[-1] = low, max(high, edges[-1])
    return edges


def grouped_bars(values: Mapping[str, Mapping[str, float]], ylabel: str, title: str, log: bool = False,
                 errors: Mapping[str, Mapping[str, float]] | None = None):
    """Bars grouped by outer key (e.g. tokenizer), one colour per inner key (e.g. domain); `errors`, in the same
    shape, draws each bar's spread and starts the axis near the lowest bar, so that small differences show."""
    groups = list(values)
    members = list(next(iter(values.values())))
    width = 0.8 / len(members)
    x = np.arange(len(groups))
    fig, ax = plt.subplots(figsize=(8, 4))
    for i, member in enumerate(members):
        heights = [values[g][member] for g in groups]
        spread = None if errors is None else [errors[g][member] for g in groups]
        bars = ax.bar(x + (i - (len(members) - 1) / 2) * width, heights, width, yerr=spread, capsize=3, label=member)
        ax.bar_label(bars, fmt="%.3g", fontsize=7, label_type="edge" if errors is None else "center")
    ax.set_xticks(x, groups)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if log:
        ax.set_yscale("log")
    if errors is not None:
        ax.set_ylim(0.9 * min(min(v.values()) for v in values.values()), None)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


def bars(values: Mapping[str, float], ylabel: str, title: str, log: bool = False, fmt: str = "%.3g"):
    """One bar per key, labelled with its value."""
    fig, ax = plt.subplots(figsize=(7, 3.5))
    drawn = ax.bar(list(values), list(values.values()), color="tab:blue")
    ax.bar_label(drawn, fmt=fmt, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if log:
        ax.set_yscale("log")
    fig.tight_layout()
    return fig


def ranked_bars(values: Mapping[str, float], xlabel: str, title: str, fmt: str = "{:.2%}"):
    """One horizontal bar per key, smallest at the top, each labelled with its value: readable with
    long names and values that span orders of magnitude."""
    names = sorted(values, key=values.get)
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(names) + 1.2))
    drawn = ax.barh(names, [values[n] for n in names], color="tab:blue")
    ax.bar_label(drawn, labels=[fmt.format(values[n]) for n in names], padding=3, fontsize=8)
    ax.set_xlim(0, max(values.values()) * 1.18 or 1)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    fig.tight_layout()
    return fig


def parameter_split(splits: Mapping[str, Mapping[str, int]], title: str):
    """Stacked bars: vocabulary (embedding + LM head) vs transformer body parameters per tokenizer."""
    names = list(splits)
    vocabulary = np.array([splits[n]["vocabulary"] for n in names]) / 1e6
    body = np.array([splits[n]["body"] for n in names]) / 1e6
    fig, ax = plt.subplots(figsize=(7, 3.8))
    ax.bar(names, body, label="transformer body")
    ax.bar(names, vocabulary, bottom=body, label="embedding + LM head")
    for i, n in enumerate(names):
        share = vocabulary[i] / (vocabulary[i] + body[i])
        ax.text(i, body[i] + vocabulary[i], f"{share:.0%} vocab", ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("parameters (millions)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    return fig


def line(xs: Sequence[float], ys_by_label: Mapping[str, Sequence[float]], xlabel: str, ylabel: str,
         title: str, logx: bool = False):
    """One line per label over a shared x axis, with markers at the measured points."""
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for label, ys in ys_by_label.items():
        ax.plot(xs, ys, marker="o", label=label)
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def blend_strip(dataset_index: np.ndarray, names: Sequence[str], title: str):
    """Which source each of the first samples came from: one coloured cell per sample."""
    from matplotlib.colors import ListedColormap

    colours = plt.get_cmap("tab10").colors[: len(names)]
    width = 50
    cells = np.full(-(-dataset_index.size // width) * width, np.nan)
    cells[: dataset_index.size] = dataset_index
    fig, ax = plt.subplots(figsize=(9, 0.35 * cells.size / width + 1.2))
    ax.imshow(cells.reshape(-1, width), cmap=ListedColormap(colours), vmin=-0.5, vmax=len(names) - 0.5, aspect="auto")
    ax.set_xlabel("sample (within a line of 50)")
    ax.set_ylabel("line")
    ax.set_title(title)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colours]
    ax.legend(handles, names, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


def attention_masks(with_documents: np.ndarray, without: np.ndarray, title: str):
    """Two masks side by side: plain causal, and causal within documents."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.2))
    for ax, mask, name in zip(axes, (without, with_documents), ("causal only", "causal within each document")):
        ax.imshow(mask, cmap="Greys", interpolation="nearest")
        ax.set_title(name)
        ax.set_xlabel("key position")
        ax.set_ylabel("query position")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def finished_loss_axes(fig, ax, title: str, ln_vocab: float | None = None):
    """The loss-per-step figures' common end: ln V drawn across (when given), axis labels, title, legend."""
    if ln_vocab is not None:
        ax.axhline(ln_vocab, color="black", linestyle="--", linewidth=1,
                   label=f"ln V = {ln_vocab:.2f} (uniform guess)")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (nats per token)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    return fig


def loss_curves(logs: Mapping[str, Sequence[dict]], ln_vocab: float, title: str):
    """Training loss per step of several runs on one axis, with ln V (a uniform guess) drawn across."""
    fig, ax = plt.subplots(figsize=(8, 4))
    for label, log in logs.items():
        ax.plot([row["step"] for row in log], [row["loss"] for row in log], label=label)
    return finished_loss_axes(fig, ax, title, ln_vocab)


def resumed_run(pieces: Mapping[str, Any], stop_step: int, title: str):
    """A run stopped and resumed drawn over the uninterrupted run. `pieces`: the uninterrupted run's log
    first, then the parts' logs in order (each with step and loss), by label; where the parts sit on the
    wide grey line, the resume took the same steps."""
    (whole_label, whole), *parts = pieces.items()
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(whole["step"], whole["loss"], color="lightgray", linewidth=6, label=whole_label)
    for (label, part), marker in zip(parts, "os^v"):
        ax.plot(part["step"], part["loss"], marker=marker, markersize=3, label=label)
    ax.axvline(stop_step - 0.5, color="black", linestyle=":", linewidth=1,
               label=f"checkpoint after step {stop_step - 1}")
    return finished_loss_axes(fig, ax, title)


def overlapping_curves(logs: Mapping[str, Any], ln_vocab: float, title: str):
    """Loss curves expected to coincide, drawn from the widest to the thinnest so that each stays visible
    under the next (a curve that parts from the others shows at once), with ln V across."""
    fig, ax = plt.subplots(figsize=(8, 4))
    widths = np.linspace(8, 1.5, num=max(len(logs), 2))
    for (label, log), width in zip(logs.items(), widths):
        ax.plot(log["step"], log["loss"], linewidth=width, alpha=0.8, solid_capstyle="round", label=label)
    return finished_loss_axes(fig, ax, title, ln_vocab)


def document_length_panels(lengths_by_domain: Mapping[str, Sequence[int]], unit: str = "characters",
                           cap: int | None = None, cap_label: str = "cap"):
    """One panel per domain (its own count axis, shared log-spaced bins), so a domain of 79 documents
    shows as clearly as one of 1,374; an optional vertical line marks a length cap."""
    names = list(lengths_by_domain)
    all_lengths = np.concatenate([np.asarray(v) for v in lengths_by_domain.values()])
    bins = log_bins(all_lengths)
    fig, axes = plt.subplots(len(names), 1, figsize=(8, 1.9 * len(names) + 0.6), sharex=True)
    axes = np.atleast_1d(axes)
    for k, (ax, name) in enumerate(zip(axes, names)):
        lengths = np.asarray(lengths_by_domain[name])
        ax.hist(lengths, bins=bins, color=plt.get_cmap("tab10")(k))
        ax.axvline(np.median(lengths), color="black", linewidth=1, label=f"median {np.median(lengths):,.0f}")
        if cap is not None:
            ax.axvline(cap, color="tab:red", linestyle="--", linewidth=1, label=f"{cap_label} {cap:,}")
        ax.set_ylabel("documents")
        ax.set_title(f"{name} ({lengths.size:,} documents)", fontsize=10, loc="left")
        ax.legend(fontsize=8, loc="upper left")
    axes[-1].set_xscale("log")
    axes[-1].set_xlabel(f"document length ({unit}, log scale)")
    fig.suptitle("How long are the documents in each domain?")
    fig.tight_layout()
    return fig


def _axes(ax, figsize):
    """The Axes to draw on: the one given, or one of a new figure."""
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def lsh_s_curve(threshold: float, settings: Mapping[str, tuple[int, int]], title: str, ax=None):
    """Chance that two documents of a given Jaccard similarity become LSH candidates, 1 - (1 - s^r)^b, for
    each (bands, rows) setting, with the threshold marked."""
    from ..clean.text.lsh import candidate_probability

    ax = _axes(ax, (7, 4))
    grid = np.linspace(0, 1, 501)
    for k, (label, (bands, rows)) in enumerate(settings.items()):
        ax.plot(grid, candidate_probability(grid, bands, rows), color=plt.get_cmap("tab10")(k),
                linewidth=2.2 if k == 0 else 1.2, linestyle="-" if k == 0 else "--",
                label=f"{label}: {bands} bands x {rows} rows")
    ax.axvline(threshold, color="black", linestyle=":", linewidth=1, label=f"threshold {threshold:g}")
    ax.set_xlabel("Jaccard similarity of two documents")
    ax.set_ylabel("probability of becoming a candidate pair")
    ax.set_title(title)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    ax.figure.tight_layout()
    return ax.figure


def measured_recall(threshold: float, bands: int, rows: int, similarity: Sequence[float], removed: Sequence[bool],
                    title: str, ax=None):
    """The share of planted copies removed in each 0.02-wide step of their Jaccard with the original, as
    markers, on the S-curve of the bands and rows that found them, with the threshold marked."""
    from ..clean.text.lsh import candidate_probability

    ax = _axes(ax, (7, 4))
    similarity, removed = np.asarray(similarity, float), np.asarray(removed, bool)
    grid = np.linspace(0, 1, 501)
    ax.plot(grid, candidate_probability(grid, bands, rows), color="tab:blue", linewidth=1.8,
            label=f"candidate probability, {bands} bands x {rows} rows")
    edges = np.arange(np.floor(similarity.min() * 50) / 50, similarity.max() + 0.02, 0.02)
    steps = np.digitize(similarity, edges)
    centres = [edges[k - 1] + 0.01 for k in np.unique(steps)]
    shares = [removed[steps == k].mean() for k in np.unique(steps)]
    ax.plot(centres, shares, "o", color="tab:orange", label="planted copies removed (share per 0.02 step)")
    ax.axvline(threshold, color="black", linestyle=":", linewidth=1, label=f"threshold {threshold:g}")
    ax.set_xlabel("Jaccard similarity of copy and original (word 5-grams, exact)")
    ax.set_ylabel("share removed / probability")
    ax.set_title(title)
    ax.set_xlim(max(0.0, similarity.min() - 0.1), 1)
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    ax.figure.tight_layout()
    return ax.figure


def cluster_sizes(series: Mapping[str, Mapping], title: str, ax=None):
    """How many groups of near-duplicates have each size, on log-log axes, one marker series per run
    (`report["fuzzy"]["group_sizes"]`: size -> groups)."""
    ax = _axes(ax, (6.5, 4))
    for k, (label, sizes) in enumerate(series.items()):
        pairs = sorted((int(size), int(count)) for size, count in sizes.items())
        if pairs:
            ax.plot(*zip(*pairs), marker="o", linestyle="-", color=plt.get_cmap("tab10")(k),
                    markersize=max(3, 7 - 2 * k), linewidth=1, alpha=0.8, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("documents in the group (the kept one included)")
    ax.set_ylabel("groups of that size")
    ax.set_title(title)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    ax.figure.tight_layout()
    return ax.figure


def estimate_vs_exact(exact: Sequence[float], estimates: Mapping[str, Sequence[float]], num_perm: int, title: str,
                      ax=None):
    """MinHash estimates against exact Jaccard, one marker per estimator, with the diagonal and the band of
    two standard errors, 2 * sqrt(J (1 - J) / num_perm), that an unbiased estimate stays inside."""
    ax = _axes(ax, (5.5, 5))
    grid = np.linspace(0, 1, 201)
    spread = 2 * np.sqrt(grid * (1 - grid) / num_perm)
    ax.fill_between(grid, grid - spread, grid + spread, color="grey", alpha=0.2,
                    label=f"±2 standard errors ({num_perm} permutations)")
    ax.plot(grid, grid, color="black", linewidth=1, label="estimate = exact")
    for k, (label, values) in enumerate(estimates.items()):
        ax.scatter(exact, values, s=14, alpha=0.7, marker="ox+"[k % 3], color=plt.get_cmap("tab10")(k), label=label)
    ax.set_xlabel("exact Jaccard similarity (word 5-gram sets)")
    ax.set_ylabel("MinHash estimate")
    ax.set_title(title)
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.legend(loc="upper left", fontsize=8)
    ax.figure.tight_layout()
    return ax.figure


def similarity_by_ngram(ngrams: Sequence[int], similarities: Mapping[str, Sequence[float]], threshold: float,
                        title: str, ax=None):
    """Jaccard similarity of one pair of texts as the shingle size grows, one line per way of preparing the
    texts, with a dedup threshold drawn across."""
    ax = _axes(ax, (7, 3.8))
    for label, values in similarities.items():
        ax.plot(ngrams, values, marker="o", label=label)
    ax.axhline(threshold, color="tab:red", linestyle="--", linewidth=1, label=f"dedup threshold {threshold:g}")
    ax.set_xticks(list(ngrams))
    ax.set_xlabel("shingle size n (words)")
    ax.set_ylabel("Jaccard similarity")
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.figure.tight_layout()
    return ax.figure


def rank_frequency(counts: Mapping[str, np.ndarray], title: str, ax=None):
    """Each token id's share of the tokens against its rank, most frequent first, log-log: real text falls
    along a line (Zipf's law: a few ids are very frequent); ids drawn uniformly have no such head, and in a sample
smaller than V their curve steps down where ids seen 3, 2, then 1 times end."""
    ax = _axes(ax, (8, 4.5))
    for (label, values), style in zip(counts.items(), ("-", "--", "-", "--", ":", "-.")):
        ordered = np.sort(np.asarray(values)[np.asarray(values) > 0])[::-1]
        ax.loglog(np.arange(1, len(ordered) + 1), ordered / ordered.sum(), style, label=label)
    ax.set_xlabel("the id's frequency rank (1 = most frequent)")
    ax.set_ylabel("share of all tokens")
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.figure.tight_layout()
    return ax.figure


def training_and_held_out(logs: Mapping[str, Sequence[dict]], ln_vocab: float, title: str):
    """Training loss (line) and held-out loss on healthy batches (dots, where evaluated) of several runs, one
    colour each, with ln V across: a bug shows as a run whose two curves part or never leave ln V."""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for index, (label, log) in enumerate(logs.items()):
        colour = plt.get_cmap("tab10")(index)
        ax.plot([row["step"] for row in log], [row["loss"] for row in log], color=colour, label=f"{label}: training")
        held = [(row["step"], row["eval_loss"]) for row in log if row.get("eval_loss") is not None]
        if held:
            ax.plot(*zip(*held), "o--", color=colour, markersize=4, label=f"{label}: held out")
    finished_loss_axes(fig, ax, title, ln_vocab)
    ax.set_ylabel("loss (nats per token)")
    ax.legend(fontsize=7, ncol=2)
    return fig
