"""What the notebooks draw and record: the run's environment and metrics, labelled figures, and live
controls (`explore`) that redraw them in JupyterLab. Importing any of it in a notebook kernel leaves the loader's
`real data: ...` line to the lesson (`env.leave_the_loaders_news_to_the_lesson`): lessons and solutions alike."""

from .env import leave_the_loaders_news_to_the_lesson

leave_the_loaders_news_to_the_lesson()
