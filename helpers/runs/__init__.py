"""Notebooks run headless (`python -m helpers.runs`): papermill over a grid of parameters, each run's
log and metrics, and the summary of a grid."""
