"""Parquet files opened for reading as taskpack reads them: front to back, or a row group at
a time.

pyarrow's `ParquetFile` pre-buffers by default: it reads every column chunk a read will need in
one go, so `iter_batches` over a whole file holds the whole file. On a 126 MB split that was
146 MiB of fresh memory and a first pass of 0.47 s on this machine's VM (whose host faults in
each page the guest first touches), against 36 MiB and 0.05 s read chunk by chunk: the same
bytes from the page cache, in buffers the allocator reuses. Pre-buffering pays off for many
small reads over a slow network; every file taskpack reads is local. And a column chunk is read
a MiB at a time (`buffer_size`), not whole: a source written as one row group holds a column
of the whole file in one chunk (120 MB of questions in one GSM8K-shaped file).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow.parquet as pq


def parquet_file(source: Any, metadata: pq.FileMetaData | None = None) -> pq.ParquetFile:
    """`source` (a path or a binary file) as a ParquetFile that reads what it is asked for,
    when it is asked (see the module's docstring)."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(source, metadata=metadata, pre_buffer=False, buffer_size=1 << 20)
