"""Where each cell of a table is in the stored text, so a finding on a cell (and its
fact) carries a span that `spanExcerpt`, cards and the admin highlight show: the cell's
text, quotes excluded. CSV text is the file as uploaded; an XLSX sheet's is the CSV
rendering of `ingest.formats.xlsx.render`, which records the offsets as it writes.

`csv_records` reads CSV as `csv.DictReader` does (the excel dialect, blank lines
skipped, a missing field None) and locates each field in the text; a field it cannot
locate exactly (an odd quoting) gets no span rather than a wrong one.
"""

import csv
import io
from collections.abc import Iterator, Mapping, Sequence

Span = tuple[int, int]
Row = tuple[Mapping[str, str | None], Mapping[str, Span]]


def field_spans(record: str, base: int) -> list[Span]:
    """The spans (offset by `base`) of the fields of one CSV record's raw text: a quoted
    field's span is inside its quotes."""
    spans: list[Span] = []
    pos = 0
    while True:
        if record.startswith('"', pos):
            end = pos + 1
            while (end := record.find('"', end)) != -1 and record.startswith('"', end + 1):
                end += 2
            if end == -1:
                end = len(record)
            spans.append((base + pos + 1, base + end))
            pos = end + 1
        else:
            end = record.find(",", pos)
            end = len(record) if end == -1 else end
            spans.append((base + pos, base + end))
            pos = end
        if pos >= len(record) or record[pos] != ",":
            return spans
        pos += 1


def located(text: str, values: Sequence[str], spans: Sequence[Span]) -> list[Span | None]:
    """Each value's span when the text there is that value (a doubled quote undone)."""
    if len(values) != len(spans):
        return [None] * len(values)
    return [
        span if text[span[0] : span[1]].replace('""', '"') == value else None
        for value, span in zip(values, spans, strict=True)
    ]


def csv_records(text: str) -> tuple[list[str], Iterator[Row]]:
    """The header of CSV `text` and its data rows, each with its cells' spans."""
    starts = [0, *(i + 1 for i, c in enumerate(text) if c == "\n"), len(text) + 1]
    reader = csv.reader(io.StringIO(text))
    header = next(reader, [])

    def rows() -> Iterator[Row]:
        line = reader.line_num
        for values in reader:
            first, line = starts[line], reader.line_num
            if not values:
                continue
            record = text[first : starts[min(line, len(starts) - 1)] - 1]
            spans = located(text, values, field_spans(record, first))
            cells: dict[str, str | None] = {h: None for h in header}
            cells.update(zip(header, values, strict=False))
            yield cells, {h: s for h, s in zip(header, spans, strict=False) if s is not None}

    return header, rows()
