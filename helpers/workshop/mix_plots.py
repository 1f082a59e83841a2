"""Notebook 10's figures: a swarm of mixtures in the simplex, and a law's predictions against measurements. One idea
each (the proof's bars with their seed spread are `plots.grouped_bars`)."""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np


def polygon_corners(count: int) -> np.ndarray:
    """The corners of a regular polygon, one per domain, the first at the top."""
    angles = np.pi / 2 + 2 * np.pi * np.arange(count) / count
    return np.column_stack([np.cos(angles), np.sin(angles)])


def swarm_in_the_simplex(shares: np.ndarray, values: Sequence[float], names: Sequence[str], value_label: str,
                         title: str, marked: Mapping[str, Sequence[float]] | None = None):
    """Each mixture drawn where its shares put it among the domains' corners (a mixture all of one domain sits on
    that corner, the uniform one in the middle), coloured by `values`; `marked` mixtures get a labelled cross."""
    corners = polygon_corners(len(names))
    points = np.asarray(shares) @ corners
    fig, ax = plt.subplots(figsize=(6, 5.2))
    ax.fill(*corners.T, color="0.95", zorder=0)
    for (x, y), name in zip(corners, names):
        ax.annotate(name, (x, y), xytext=(x * 1.12, y * 1.12), ha="center", va="center", fontsize=9)
    drawn = ax.scatter(points[:, 0], points[:, 1], c=values, cmap="viridis_r", s=36, edgecolor="k", linewidth=0.4)
    for label, mixture in (marked or {}).items():
        x, y = np.asarray(mixture) @ corners
        ax.scatter([x], [y], marker="X", s=90, color="tab:red", edgecolor="w", zorder=3)
        ax.annotate(label, (x, y), xytext=(6, -12), textcoords="offset points", fontsize=8, color="tab:red")
    fig.colorbar(drawn, ax=ax, label=value_label, shrink=0.8)
    ax.set_aspect("equal")
    ax.set_xlim(-1.35, 1.35)
    ax.set_ylim(-1.2, 1.3)
    ax.axis("off")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def predicted_against_measured(pairs: Mapping[str, tuple[Sequence[float], Sequence[float]]], unit: str, title: str):
    """Per law: (predicted, measured) for each run left out of its fit; on the diagonal, a perfect prediction."""
    fig, ax = plt.subplots(figsize=(5.4, 5))
    low = min(min(min(p), min(m)) for p, m in pairs.values())
    high = max(max(max(p), max(m)) for p, m in pairs.values())
    ax.plot([low, high], [low, high], color="0.6", linestyle="--", linewidth=1, label="prediction = measurement")
    for (label, (predicted, measured)), marker in zip(pairs.items(), "os^"):
        ax.scatter(measured, predicted, marker=marker, s=28, alpha=0.8, label=label)
    ax.set_xlabel(f"measured {unit}")
    ax.set_ylabel(f"predicted {unit}, the run left out of the fit")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
