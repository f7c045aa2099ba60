"""Reading source files the same way for every reader: any fsspec URL, compressed or not,
streamed, each row tagged with the place it came from (`records`, `opening`). Each kind of
table has its module (`jsonl`, `csv`, `parquet`) holding both its row reader and the chunks the
columnar path reads of it with Arrow (`chunk`); `tables` picks the kind by the file's suffix.

A reader never raises for one bad row: it yields a `Record` carrying the error, so the importer
decides whether to stop (the default) or skip the row and report it (`--skip-invalid`).
"""
