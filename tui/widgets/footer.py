"""A Footer that rebuilds its keys only when the keys it shows change."""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Footer

Signature = tuple[tuple[Binding, str, bool, str], ...]


class KeysFooter(Footer):
    """Textual's Footer, minus rebuilds that would show the same keys.

    The Footer recomposes, removing and mounting one FooterKey per binding (each styled on
    mount), on every bindings signal: a screen's mount, each focus change, the first
    recompose itself. Opening the Run screen sent three with the same keys, and the three
    rebuilds were about a third of the time to open it.

    At 80 columns a screen's keys and the app's (Scores, Quit) must all fit: the footer is
    compact (no padding around each key) and each screen shows only its main keys (the rest
    are in F1's help).
    """

    def __init__(self, **kw) -> None:
        kw.setdefault("compact", True)
        super().__init__(**kw)
        self._shown: Signature | None = None

    def _signature(self) -> Signature:
        """What ``compose`` draws from the bindings: the shown ones and the palette key."""
        palette = self.app.COMMAND_PALETTE_BINDING
        return tuple(
            (binding, self.app.get_key_display(binding), enabled, tooltip or "")
            for key, (_node, binding, enabled, tooltip) in self.screen.active_bindings.items()
            if binding.show or key == palette
        )

    async def recompose(self) -> None:
        if not self.is_attached:
            return
        shown = self._signature()
        if shown == self._shown:
            return
        self._shown = shown
        await super().recompose()
