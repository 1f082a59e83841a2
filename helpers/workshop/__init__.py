"""What the notebooks draw and record: the run's environment and metrics, labelled figures, and live
controls (`explore`) that redraw them in JupyterLab."""
