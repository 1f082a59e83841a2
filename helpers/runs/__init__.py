"""Notebooks run headless (`python -m helpers.runs`): papermill over a grid of parameters, each run's
log and metrics, and the summary of a grid; and a mixing law fitted to a swarm of runs on other mixtures
of the domains (`python -m helpers.runs fit-mix`), with the mixture it proposes."""
