"""The control room's table: a Textual DataTable whose cells change without the whole screen
being drawn again."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from rich.text import Text
from textual.cache import LRUCache
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey


class JobsTable(DataTable[Text]):
    """`DataTable.update_cell` counts an update that every cached render of the table
    depends on: one cell changed renders every cell on the screen again (~50 ms of CPU for
    47 rows), and the ages of jobs younger than a minute change every second. `set_cells`
    drops the cached renders of the changed cells alone and refreshes their rows: the
    other rows on the screen stay as the terminal has them, and the changed rows' other
    cells come from the cache."""

    def set_cells(self, changes: Iterable[tuple[str, str, Text]]) -> None:
        """Put each (row key, column key, value) in its cell and draw the rows changed
        again (the columns keep their widths)."""
        rows: set[RowKey] = set()
        cells: set[tuple[RowKey, ColumnKey]] = set()
        for row_key, column_key, value in changes:
            row, column = RowKey(row_key), ColumnKey(column_key)
            self._data[row][column] = value
            rows.add(row)
            cells.add((row, column))
        if not rows:
            return
        lines = {self._row_locations.get(row) for row in rows}
        _drop(self._cell_render_cache, lambda key: (key[0], key[1]) in cells)
        _drop(self._row_render_cache, lambda key: key[0] in rows)
        _drop(self._row_renderable_cache, lambda key: key[1] in lines)
        self._line_cache.clear()  # lines are put together again from the rows' cells
        top = int(self.scroll_y)  # rows off the screen need no refresh (and are many)
        for index in lines:
            if index is not None and top <= index <= top + self.size.height:
                self.refresh_row(index)


def _drop(cache: LRUCache[Any, Any], stale: Callable[[Any], bool]) -> None:
    keys = cache.keys()  # an LRUCache is not iterable itself
    for key in [k for k in keys if stale(k)]:
        cache.discard(key)
