"""Is a `.bin/.idx` pair sound? `python -m helpers.check PREFIX` reads it against its sidecar and
tokenizer; `damage` breaks copies of a dataset on purpose, to show what each check catches."""
