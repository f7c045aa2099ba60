"""Columnar import: a reader maps a whole Arrow batch of source rows to stored task rows at once.

The row path parses, maps, validates and serializes each row in Python (pydantic, json): about
ten times the cost of a hand-written pyarrow script. A row format's field map (`fieldmap`) also
gives it a columnar reader: its source read by pyarrow's multithreaded parsers (`_sources`),
checked a batch at a time by the kinds of its fields (`kinds`, over `checks`), and written as
the rows the row path would write (same JSON text, digests, ids). The text comes from a
`template.Template`: the row path's own mapping applied once to a row of slots, validated and
serialized by the row path's own code, then cut at its slots and filled per batch with the
escaped columns. Whatever a batch check cannot vouch for (a null, a type the row path would
refuse, a blank line, text a Python `strip` and an Arrow trim could treat differently) raises
`NotColumnar`, and only the rows it refuses go through the row path (`mapped`). An invalid row
sends the whole source row by row, so errors are the row path's own, word for word.
`tests/test_columnar.py` compares both paths on every data set.

A part of a sharded import reads only lines first..last of its source (`lines`, an argument of
every columnar reader): a JSON Lines source then yields only the chunks of those lines, each
chunk before them counted (its rows numbered as in the whole source) but never parsed; any
other source gives up, for the row path's filter.
"""
