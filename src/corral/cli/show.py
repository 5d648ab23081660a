"""Outside text in human output: commands are data (see corral.core.text).

Plain lines go through `printable`; rich tables and styled lines take `cell`, a rich Text,
which rich never reads as markup (`[/x]` crashed `corral ls`, `[link=…]` made a link)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.core.text import printable

if TYPE_CHECKING:
    from rich.text import Text

__all__ = ["cell", "printable"]


def cell(text: str, style: str = "") -> Text:
    """`text` for rich: control characters as visible escapes, no markup."""
    from rich.text import Text

    return Text(printable(text), style=style)
