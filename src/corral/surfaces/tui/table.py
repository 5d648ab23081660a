"""The control room's table: a Textual DataTable whose cells change without the whole screen
being drawn again."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey


class JobsTable(DataTable[Text]):
    """`DataTable.update_cell` counts an update that every cached line of the table depends
    on: one cell changed draws every row on the screen again (~50 ms of CPU for 47 rows),
    and the ages of jobs younger than a minute change every second. `set_cell` drops the
    cached renders and refreshes the cell's row alone: the other rows on the screen stay as
    the terminal has them (only a refreshed region is drawn again)."""

    def set_cell(self, row_key: str, column_key: str, value: Text) -> None:
        """Put `value` in the cell and draw its row again (the column keeps its width)."""
        row = RowKey(row_key)
        self._data[row][ColumnKey(column_key)] = value
        self._row_render_cache.clear()
        self._cell_render_cache.clear()
        self._row_renderable_cache.clear()
        self._line_cache.clear()
        self.refresh_row(self.get_row_index(row))
