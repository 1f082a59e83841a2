"""The text a pipeline starts from: the workshop's real corpus (`python -m helpers.corpus`), the JSONL
rules every reader follows, and the contiguous byte ranges a large input is cut into for parallel work."""
