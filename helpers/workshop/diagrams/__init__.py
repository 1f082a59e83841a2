"""Explanatory drawings the notebooks open with or teach from (layouts, chains, timelines), one file each; the
plots of measured results stay in `helpers.workshop.plots`."""
