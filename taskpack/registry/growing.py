"""A file being downloaded, read while it grows: how a split's rows are checked as its bytes
arrive instead of after them.

Parquet opens from its footer, at the end of the file; the downloader fetches that tail first
(one range request) and hands it here, so a reader opens the file at once and then reads its
row groups in order, each once the download has passed its end (`GrowingReader.upto`: Arrow
then reads it from disk; a plain read waits for the bytes it needs). The check's verdict counts only
if the download ends with the right hash, was never started over (a retried transfer may have
written other bytes under the reader), and ends with the very tail the reader was served;
otherwise the caller checks the finished file.
"""

from __future__ import annotations

import io
import threading
from pathlib import Path

from taskpack.base.objects import HashedFile


class Growing:
    """The writing side (a download `Sink`) and the shared count of bytes written."""

    def __init__(self, sink: HashedFile, path: Path, size: int, tail: bytes) -> None:
        self._sink = sink
        self.path = path
        self.size = size
        self.tail = tail
        self._ready = threading.Condition()
        self._written = 0
        self._ended = False
        self._last = b""  # the newest bytes written, as many as the tail
        self.restarted = False

    def write(self, data: bytes, /) -> int:
        n = self._sink.write(data)
        keep = len(self.tail)
        self._last = bytes(data[-keep:]) if len(data) >= keep else (self._last + data)[-keep:]
        with self._ready:
            self._written += len(data)
            self._ready.notify_all()
        return n

    def seek(self, offset: int, whence: int = 0, /) -> int:
        with self._ready:
            if self._written:
                self.restarted = True  # what a reader saw may not be what is kept
            self._written = 0
        return self._sink.seek(offset, whence)

    def truncate(self, size: int | None = None, /) -> int:
        return self._sink.truncate(size)

    def end(self) -> None:
        """No more bytes will come (done, or given up): a waiting reader reads what there is."""
        with self._ready:
            self._ended = True
            self._ready.notify_all()

    def wait_for(self, end: int) -> None:
        with self._ready:
            self._ready.wait_for(lambda: self._written >= end or self._ended)
            if self._written < end:
                raise OSError(f"{self.path}: the download ended at byte {self._written}")

    def faithful(self) -> bool:
        """Whether a reader saw exactly the bytes kept (asked once the download is done):
        never started over, as long as said, and the tail it was served (fetched apart) equal
        to the file's own end."""
        return not self.restarted and self._written == self.size and self._last == self.tail

    def reader(self) -> GrowingReader:
        return GrowingReader(self)


class GrowingReader(io.RawIOBase):
    """The reading side: a seekable binary file of the final size whose reads wait for the
    download, the tail served from memory."""

    def __init__(self, growing: Growing) -> None:
        super().__init__()
        self._growing = growing
        self._file = growing.path.open("rb", buffering=0)
        self._pos = 0
        self._tail_start = growing.size - len(growing.tail)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._growing.size}[whence]
        self._pos = max(base + offset, 0)
        return self._pos

    def read(self, size: int | None = -1, /) -> bytes:
        """As many bytes as asked up to the end of the file (never fewer: Parquet's reader
        takes a short read as a short file), the part before the tail once it has arrived.
        Read straight into one bytes object, which Arrow then uses without a copy."""
        total = self._growing.size
        end = total if size is None or size < 0 else min(self._pos + size, total)
        pieces = []
        while self._pos < end:
            if self._pos >= self._tail_start:
                data = self._growing.tail[self._pos - self._tail_start : end - self._tail_start]
            else:
                upto = min(end, self._tail_start)
                self._growing.wait_for(upto)
                self._file.seek(self._pos)
                data = self._file.read(upto - self._pos)
                if not data:
                    raise OSError(f"{self._growing.path}: shorter than it was said to be")
            pieces.append(data)
            self._pos += len(data)
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def upto(self, end: int) -> str:
        """The file's path once its first `end` bytes are written (`rows.Arriving`): Arrow
        then reads them itself, from disk, not through this reader. An end past the file's
        (a footer's offsets are the writer's word) waits for the whole file, and no more."""
        self._growing.wait_for(min(end, self._growing.size))
        return str(self._growing.path)

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        memoryview(buffer)[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._file.close()
        super().close()
