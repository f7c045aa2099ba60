"""CSV and TSV sources: the row path's reader, and the chunks the columnar path reads with Arrow."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import IO

import pyarrow as pa

from taskpack.converters._sources import chunk as chunking
from taskpack.converters._sources.chunk import Chunk, NotColumnar
from taskpack.converters._sources.opening import open_binary
from taskpack.converters._sources.parquet import _table_chunk
from taskpack.converters._sources.records import Record
from taskpack.errors import TaskpackError


def iter_csv_rows(
    stream: IO[bytes], where: str, delimiter: str, strip_headers: bool
) -> Iterator[Record]:
    """CSV/TSV rows as {column: text}; BOM and CRLF handled, quoted newlines kept verbatim."""
    text = io.TextIOWrapper(stream, encoding="utf-8-sig", newline="")
    reader = csv.reader(text, delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        return
    except UnicodeDecodeError as e:
        raise TaskpackError(f"{where}:1: header is not valid UTF-8 ({e.reason})") from None
    if strip_headers:
        header = [h.strip() for h in header]
    if len(set(header)) != len(header):
        raise TaskpackError(f"{where}:1: duplicate column names in header {header}")
    line = 1
    while True:
        try:
            values = next(reader)
        except StopIteration:
            return
        except UnicodeDecodeError as e:
            raise TaskpackError(
                f"{where}:{reader.line_num + 1}: not valid UTF-8 ({e.reason})"
            ) from None
        except csv.Error as e:
            yield Record(f"{where}:{reader.line_num}", error=f"bad CSV ({e})", line=reader.line_num)
            continue
        start, line = line + 1, reader.line_num
        if not values:
            continue
        if len(values) != len(header):
            yield Record(
                f"{where}:{start}",
                error=f"{len(values)} values for {len(header)} columns",
                line=start,
            )
            continue
        yield Record(f"{where}:{start}", task=dict(zip(header, values, strict=True)), line=start)


def csv_chunks(uri: str, delimiter: str, strip_headers: bool) -> Iterator[Chunk]:
    """A CSV file as tables of text columns named by its header, as Python's `csv` reads it
    (the row path's reader): the header is read by `csv` itself, the rows by Arrow's parser
    with the same quoting; a row of another width, or anything Arrow would read otherwise,
    gives up on the source."""
    import pyarrow.csv as pcsv

    with open_binary(uri) as f:
        text = io.TextIOWrapper(f, encoding="utf-8-sig", newline="")
        try:
            header = next(csv.reader(text, delimiter=delimiter))
        except (StopIteration, UnicodeDecodeError, csv.Error):
            raise NotColumnar(f"{uri}: no readable header") from None
    names = [h.strip() for h in header] if strip_headers else header
    if len(set(names)) != len(names) or len(delimiter) != 1:
        raise NotColumnar("duplicate column names, or a delimiter of several characters")
    with open_binary(uri) as f:
        try:
            reader = pcsv.open_csv(
                f,
                read_options=pcsv.ReadOptions(
                    column_names=names, skip_rows=1, block_size=chunking.BLOCK, use_threads=True
                ),
                parse_options=pcsv.ParseOptions(
                    delimiter=delimiter, newlines_in_values=True, ignore_empty_lines=True
                ),
                convert_options=pcsv.ConvertOptions(
                    column_types={n: pa.string() for n in names},
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                ),
            )
            first = 0
            for batch in reader:
                yield _table_chunk(pa.Table.from_batches([batch]), uri, first, lines=False)
                first += batch.num_rows
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise NotColumnar(str(e)) from None
